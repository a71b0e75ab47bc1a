"""A campaign at load: many jobs, a share of them faulty in every way the verifier isolates, on the
local and the Ray backend. Every job must end with a verdict, none lost, none stored twice.

    python benchmarks/campaign_load.py --jobs 1000 --backend both --workers 2 \\
        --json docs/results/campaign_load.json --table docs/results/campaign_load.md

The campaign is ``replay`` over small task folders written here (``x * scale + 1``, 4096 elements at
most, so each evaluation runs in seconds under the Triton interpreter; policy off, so the faults
really run instead of being refused by the static scan). Each task's recorded kernel is good or has
one fault in ``forward``: ``segfault`` (``faulthandler._sigsegv()``), ``illegal_address`` (a store 2**40 elements
out: an out-of-range access in the interpreter, an illegal address on a GPU), ``hang`` (a busy loop,
ended by the request timeout), ``oom`` (a 32 TiB allocation), ``os_exit`` (``os._exit(0)`` from
inside the call), ``fork`` (a grandchild left sleeping: ``process_escape`` once the call has answered) and ``stdout_garbage``
(binary bytes written to fd 1 on every call; the result is right). Jobs are tasks × seeds; the good
tasks are as many as keep the faulty share at ``--faulty-share``.

Per backend: wall time, jobs per hour, the driver's peak resident memory (``VmHWM`` of the
``kernellab run`` process, read while it runs), jobs by status, every job's verdict by fault kind,
and the checks: every job finished and has a verdict, one ``solve`` per job, no job key twice, no
job tried twice. With ``--backend both`` the two backends' verdicts are compared job by job.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from faulty_candidates import FAULTS, candidate_source, write_task

EVAL_OPTIONS = ("compile_baseline=false", "time_holdout=false", "dtypes=one")


def write_tasks(root: Path, faulty_share: float, size: int) -> tuple[Path, Path, dict[str, str]]:
    """Task folders and the recorded kernels; returns (tasks folder, kernels folder, task -> kind)."""
    good = max(1, math.ceil(len(FAULTS) * (1 - faulty_share) / faulty_share))
    kinds = {f"good_{i:02d}": "good" for i in range(good)} | {f"fault_{k}": k for k in FAULTS}
    tasks, kernels = root / "tasks", root / "kernels"
    for name, kind in kinds.items():
        write_task(tasks / name, category="load", n=4096, sizes=[size, 1000], holdout=1031, policy="off")
        (kernels / name).mkdir(parents=True)
        (kernels / name / "kernel.py").write_text(candidate_source(kind))
    return tasks, kernels, kinds


def peak_rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def run_backend(backend: str, tasks: Path, kernels: Path, seeds: int, workers: int, out: Path,
                timeout_s: float, hang_timeout_s: float) -> dict:
    argv = [sys.executable, "-m", "kernellab.cli.main", "run", "--tasks", str(tasks), "--agent", "replay",
            "--agent-option", f"replay:kernels={kernels}", "--seeds", str(seeds), "--agent-concurrency",
            str(workers), "--device", "cpu", "--backend", backend, "--out", str(out)]
    for option in (*EVAL_OPTIONS, f"request_timeout_s={hang_timeout_s}"):
        argv += ["--eval-option", option]
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "RAY_USAGE_STATS_ENABLED": "0"}
    started = time.monotonic()
    peak = 0.0
    with open(out.parent / f"{out.name}.stdout", "w") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL)
        while proc.poll() is None:
            peak = max(peak, peak_rss_mb(proc.pid) or 0.0)
            if time.monotonic() - started > timeout_s:
                proc.kill()
                break
            time.sleep(0.5)
        proc.wait()
    wall = time.monotonic() - started
    return {"backend": backend, "exit": proc.returncode, "wall_s": round(wall, 1),
            "driver_peak_rss_mb": round(peak, 1), "workers": workers, "run_dir": str(out)}


def check_store(out: Path, kinds: dict[str, str]) -> dict:
    from kernellab.score.store import Store

    with Store.open(out, create=False) as store:
        (run,) = store.runs()
        jobs = store.jobs(run.id)
        statuses = Counter(j.status for j in jobs)
        by_kind: dict[str, Counter] = {}
        verdicts, missing, solves_not_one, retried = {}, [], [], []
        for job in jobs:
            finals = [a for a in store.attempts(job) if a.final]
            v = finals[-1].verdict if finals else None
            solves = sum(e.kind == "solve" for e in store.events(job))
            if job.status not in ("done", "failed") or (job.status == "done" and not finals):
                missing.append(job.key)
            if solves != 1 or len(finals) > 1:
                solves_not_one.append(job.key)
            if job.tries != 1:
                retried.append(job.key)
            name = Path(job.task_id).name
            if v:
                label = v.status.value + (f"@{v.failed_stage.value}" if v.failed_stage else "")
            else:
                label = f"job {job.status}: {job.error or 'no kernel'}"
            by_kind.setdefault(kinds.get(name, "?"), Counter())[label] += 1
            verdicts[job.key] = label
    keys = [j.key for j in jobs]
    return {"jobs": len(jobs), "statuses": dict(statuses), "distinct_keys": len(set(keys)),
            "without_verdict": missing, "solve_not_once": solves_not_one, "tried_more_than_once": retried,
            "verdicts_by_kind": {k: dict(c) for k, c in sorted(by_kind.items())}, "verdicts": verdicts}


def table(results: list[dict], jobs: int, faulty: float) -> str:
    lines = [f"{jobs} jobs, {faulty:.0%} of candidates faulty", "",
             ("| backend | workers | jobs | finished | with verdict | lost | stored twice | retried | wall s | "
              "jobs/hour | driver peak RSS MB |"), "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        c = r["check"]
        finished = c["statuses"].get("done", 0) + c["statuses"].get("failed", 0)
        lines.append(f"| {r['backend']} | {r['workers']} | {c['jobs']} | {finished} "
                     f"| {c['jobs'] - len(c['without_verdict'])} | {c['jobs'] - finished} | {len(c['solve_not_once'])} | {len(c['tried_more_than_once'])} "
                     f"| {r['wall_s']} | {r['jobs_per_hour']} | {r['driver_peak_rss_mb']} |")
    lines += ["", "| fault | verdicts (" + " / ".join(r["backend"] for r in results) + ") |", "|---|---|"]
    kinds = sorted({k for r in results for k in r["check"]["verdicts_by_kind"]})
    for k in kinds:
        cells = [", ".join(f"{v} ×{n}" for v, n in r["check"]["verdicts_by_kind"].get(k, {}).items()) for r in results]
        lines.append(f"| {k} | {' / '.join(cells)} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000, help="at least this many jobs (tasks × seeds)")
    parser.add_argument("--faulty-share", type=float, default=0.35)
    parser.add_argument("--backend", choices=("local", "ray", "both"), default="both")
    parser.add_argument("--workers", type=int, default=2, help="--agent-concurrency")
    parser.add_argument("--size", type=int, default=4096, help="elements of the largest config (per-job cost)")
    parser.add_argument("--hang-timeout", type=float, default=5.0, help="request timeout: what a hang costs")
    parser.add_argument("--timeout", type=float, default=6 * 3600, help="per backend, seconds")
    parser.add_argument("--out", type=Path, default=None, help="folder for the run folders (default: temporary)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--table", type=Path, default=None)
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="kernellab-load-"))
    if root.exists() and any(root.iterdir()):
        print(f"{root} is not empty", file=sys.stderr)
        return 2
    tasks, kernels, kinds = write_tasks(root, args.faulty_share, args.size)
    seeds = math.ceil(args.jobs / len(kinds))
    faulty = sum(k != "good" for k in kinds.values()) / len(kinds)
    backends = ("local", "ray") if args.backend == "both" else (args.backend,)
    print(f"{len(kinds)} tasks × {seeds} seeds = {len(kinds) * seeds} jobs, {faulty:.0%} faulty; {root}", flush=True)
    results = []
    for backend in backends:
        result = run_backend(backend, tasks, kernels, seeds, args.workers, root / f"run-{backend}", args.timeout,
                             args.hang_timeout)
        (root / f"run-{backend}.json").write_text(json.dumps(result) + "\n")  # kept if the check below fails
        result["check"] = check_store(root / f"run-{backend}", kinds)
        result["jobs_per_hour"] = round(result["check"]["jobs"] / result["wall_s"] * 3600)
        results.append(result)
        c = result["check"]
        print(f"{backend}: exit {result['exit']}, {c['jobs']} jobs {c['statuses']}, {result['wall_s']} s, "
              f"{result['jobs_per_hour']} jobs/h, driver peak {result['driver_peak_rss_mb']} MB, "
              f"without verdict {len(c['without_verdict'])}, stored twice {len(c['solve_not_once'])}, "
              f"retried {len(c['tried_more_than_once'])}", flush=True)
    same = None
    if len(results) == 2:
        a, b = (r["check"]["verdicts"] for r in results)
        same = {"keys_equal": a.keys() == b.keys(), "same_verdict": sum(a[k] == b.get(k) for k in a),
                "of": len(a)}
        print(f"verdicts local vs ray: {same['same_verdict']}/{same['of']} the same", flush=True)
    summary = {"jobs_asked": args.jobs, "tasks": len(kinds), "seeds": seeds, "faulty_share": round(faulty, 3),
               "size": args.size, "hang_timeout_s": args.hang_timeout, "eval_options": list(EVAL_OPTIONS),
               "cpus": os.cpu_count(), "results": [{k: v for k, v in r.items() if k != "check"} |
                                                   {"check": {k: v for k, v in r["check"].items() if k != "verdicts"}}
                                                   for r in results], "local_vs_ray": same}
    text = table(results, len(kinds) * seeds, faulty)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(summary, indent=1) + "\n")
    if args.table:
        args.table.parent.mkdir(parents=True, exist_ok=True)
        args.table.write_text(text)
    if args.out is None:
        shutil.rmtree(root, ignore_errors=True)
    ok = all(not r["check"]["without_verdict"] and not r["check"]["solve_not_once"]
             and r["check"]["distinct_keys"] == r["check"]["jobs"] for r in results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
