"""A campaign killed with SIGKILL halfway and resumed ends as an uninterrupted one; the report renders.

    python benchmarks/campaign_resume.py --phase uninterrupted --out DIR [--json DIR.json]
    python benchmarks/campaign_resume.py --phase interrupted   --out DIR [--json DIR.json]
    python benchmarks/campaign_resume.py --phase compare --a DIR1 --b DIR2 [--json cmp.json]
    python benchmarks/campaign_resume.py --phase all --out DIR [--json all.json]     # both runs, then compare
    python benchmarks/campaign_resume.py --phase render --a DIR --screenshot PNG     # report + screenshot later

Every run phase is one ``kernellab run`` (a subprocess) of ``--tasks-count`` suite tasks (default 40) ×
two LLM-free agents, ``search`` (launch-parameter tuning and templates, ``screen=false``: one proposal,
no screening) and ``replay`` (re-scores a recorded kernel per task: the task's Triton baseline, else
the search agent's first template kernel, else the reference, which is expected to fail), one seed,
strategy ``single``. The recorded kernels are written to ``DIR/recorded/`` first; the campaign goes to
``DIR/run/``.

- ``uninterrupted``: the campaign once, to its end.
- ``interrupted``: the same campaign, SIGKILLed (its process group: the orchestrator; its workers see
  it gone and end) once ``--kill-at`` of its jobs are finished (the store polled read-only), then
  ``kernellab run ... --resume`` to the end.
- ``compare``: the two run folders have the same jobs, the same correctness verdicts per job, and
  speedups vs eager whose 95% intervals overlap. Where both campaigns re-timed their finalists
  (``--retime-rounds N``, N ≥ 2), a job's speedup and interval are those of the rounds (geometric
  mean and t-interval over N fresh timings at different moments: run-to-run variation included);
  otherwise the verdict's (the geometric mean over its seen timings of ``eager_us / candidate_us``
  at the candidate's CI ends: that timing's sampling error only). Prints a table; exit 1 on any
  mismatch.
- ``all``: both runs and the comparison in one process; ``render``: the HTML report and a screenshot.

``--deadline S`` bounds a phase's wall time, report and tarball included (a machine lent for a fixed
time): its ``kernellab run``s are cut to fit, and the same command later continues the campaign, or
its re-timing, from the store (``phase.json`` keeps what the earlier call did, the SIGKILL included).

On a GPU every job's evaluation runs without the ``torch.compile`` baseline and without holdout
timings, in one dtype per task, with 0.3 s of timing per config (``--eval-option
compile_baseline=false --eval-option time_holdout=false --eval-option timing_budget_s=0.3
--eval-option dtypes=one``; holdout correctness still runs: the timings of 80 jobs are one after the
other on a GPU) and, by default, the finalists are not re-timed (``--retime-rounds 0``; each
round re-times every finalist as its job was timed, a few seconds per finalist). ``--gpu-lock timing`` (default) lets the
workers' correctness checks overlap on a GPU while each timing has it to itself. With ``--device cpu``
it all runs under the Triton interpreter (correctness only; speedups are null and only verdicts
compare). ``--pack DIR`` writes the phase folder (store, artifacts, logs; not the jobs' own solve
folders) into a tarball small enough to bring back, for ``render`` elsewhere.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))  # this checkout's kernellab, as for the campaign's subprocesses
FINISH_MARGIN_S = 45.0  # the summary, the report and the tarball after the last kernellab run (--deadline)
GPU_EVAL_OPTIONS = ("compile_baseline=false", "time_holdout=false", "timing_budget_s=0.3", "dtypes=one")
# Triton baselines first (search tunes them, replay re-scores them), then tasks a search template
# matches (no baseline: the template is both agents' kernel). Chosen for small, quick seen configs.
BASELINE_TASKS = (
    "optimizer/adamw", "optimizer/lion", "optimizer/adamw_master_weights", "optimizer/amp_unscale_check",
    "optimizer/clip_grad_norm_sgd", "optimizer/multi_tensor_adamw", "quantization/quant_int8_per_token",
    "quantization/quant_uint8_asym_per_group", "quantization/dequant_int4_group",
    "quantization/quant_int4_pow2_group_pack", "fusion/softcap_softmax", "fusion/adaln_modulate",
    "fusion/residual_rmsnorm_int8_quant", "fusion/moe_router_softmax_topk", "fusion/qk_rmsnorm_rope",
    "fusion/rope_kv_cache_write", "conv_pool/global_avg_pool", "conv_pool/adaptive_avg_pool2d",
    "conv_pool/unfold_im2col", "matmul/matmul_decode_skinny",
)
TEMPLATE_TASKS = (
    "elementwise/relu", "softmax/softmax", "normalization/rmsnorm", "reductions/sum_rows", "elementwise/silu",
    "softmax/log_softmax", "normalization/layernorm", "reductions/max_rows", "elementwise/gelu_tanh",
    "softmax/softmax_short_rows", "normalization/rmsnorm_gemma", "reductions/mean_rows", "elementwise/sigmoid",
    "softmax/softmax_temperature", "normalization/layernorm_no_bias", "reductions/absmax_rows",
    "elementwise/tanh", "softmax/softmax_with_lse", "reductions/logsumexp_rows", "elementwise/leaky_relu",
    "elementwise/squared_relu", "elementwise/exp", "elementwise/hardswish", "elementwise/softplus",
)
# Under the Triton interpreter: tasks whose small configs run in seconds.
CPU_TASKS = ("elementwise/relu", "optimizer/adamw", "softmax/softmax", "normalization/rmsnorm", "elementwise/silu",
             "reductions/sum_rows", "optimizer/lion", "elementwise/sigmoid")


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------ tasks and kernels


def choose_tasks(count: int, cpu: bool) -> list[str]:
    """``count`` tasks: on the CPU the interpreter-friendly ones first; on a GPU Triton baselines and
    template tasks alternating, so any prefix mixes both."""
    if cpu:
        pool = list(CPU_TASKS)
    else:
        pool = [t for pair in zip(BASELINE_TASKS, TEMPLATE_TASKS, strict=False) for t in pair]
        pool += [t for t in BASELINE_TASKS + TEMPLATE_TASKS if t not in pool]
    rest = [t for t in BASELINE_TASKS + TEMPLATE_TASKS if t not in pool]
    pool += rest
    if count > len(pool):
        raise SystemExit(f"--tasks-count {count}: at most {len(pool)} tasks are listed here")
    return pool[:count]


def recorded_kernel(task_id: str) -> tuple[str, str]:
    """The kernel ``replay`` re-scores for ``task_id`` and where it comes from."""
    from kernellab.agents.search.candidates import CandidatePool
    from kernellab.agents.workspace import public_task
    from kernellab.tasks.load import load_task

    task = load_task(task_id)
    if task.baseline_source and task.baseline_backend == "triton":
        return task.baseline_source, "baseline.py"
    templates = CandidatePool(public_task(task), 0, True, False).template_candidates()
    if templates:
        return templates[0].source, f"search template ({templates[0].description})"
    return (task.root / "reference.py").read_text(), "reference.py (expected to fail: not a kernel of its own)"


def write_recorded(folder: Path, tasks: list[str]) -> dict[str, str]:
    origins = {}
    for task_id in tasks:
        source, origin = recorded_kernel(task_id)
        target = folder / task_id.replace("/", "__")
        target.mkdir(parents=True, exist_ok=True)
        (target / "iter_1.py").write_text(source)
        origins[task_id] = origin
    return origins


# ------------------------------------------------------------------------------------ the campaign


def campaign_argv(args: argparse.Namespace, tasks: list[str], recorded: Path, run_dir: Path) -> list[str]:
    argv = [sys.executable, "-m", "kernellab.cli.main", "run", "--tasks", ",".join(tasks),
            "--agent", "search", "--agent", "replay", "--agent-option", "search:screen=false",
            "--agent-option", f"replay:kernels={recorded}", "--seeds", "1", "--strategy", "single",
            "--budget", "1it", "--out", str(run_dir), "--agent-concurrency", str(args.agent_concurrency),
            "--retime-rounds", str(args.retime_rounds)]
    if args.device == "cpu":
        argv += ["--device", "cpu"]
    else:
        argv += ["--gpu-lock", args.gpu_lock]
        for option in GPU_EVAL_OPTIONS:
            argv += ["--eval-option", option]
        if args.gpus:
            argv += ["--gpus", args.gpus]
    return argv


def campaign_env(args: argparse.Namespace) -> dict[str, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    src = str(ROOT / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if args.device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    elif args.agent_concurrency > 1 and "KERNELLAB_CASE_CACHE_GB" not in env:
        # several sessions share each GPU (two per worker): each keeping 45% of it would run the others out
        gpus = len(args.gpus.split(",")) if args.gpus else 1
        per_gpu = math.ceil(args.agent_concurrency / gpus)
        env["KERNELLAB_CASE_CACHE_GB"] = f"{max(2.0, 40.0 / (2 * per_gpu)):.1f}"
    return env


def store_counts(run_dir: Path) -> dict[str, int]:
    """Job counts by status, read-only (the campaign's processes keep writing)."""
    path = run_dir / "results.sqlite"
    if not path.exists():
        return {}
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            return dict(conn.execute("SELECT status, count(*) FROM jobs GROUP BY status").fetchall())
        finally:
            conn.close()
    except sqlite3.Error:
        return {}


def run_once(argv: list[str], env: dict[str, str], log_path: Path, timeout_s: float | None) -> dict[str, Any]:
    started = time.monotonic()
    with open(log_path, "ab") as out:
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, cwd=ROOT)
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            code = "timeout"
    return {"exit": code, "wall_s": round(time.monotonic() - started, 2)}


def run_killed(argv: list[str], env: dict[str, str], log_path: Path, run_dir: Path, kill_at: float,
               total: int, timeout_s: float | None) -> dict[str, Any]:
    """Start the campaign; SIGKILL its process group once ``kill_at`` of ``total`` jobs are finished."""
    target = max(1, min(total - 1, round(kill_at * total)))
    started = time.monotonic()
    with open(log_path, "ab") as out:
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, cwd=ROOT)
        killed_at: dict[str, int] = {}
        while proc.poll() is None:
            counts = store_counts(run_dir)
            if counts.get("done", 0) + counts.get("failed", 0) >= target:
                os.killpg(proc.pid, signal.SIGKILL)
                killed_at = counts
                break
            if timeout_s is not None and time.monotonic() - started > timeout_s:
                os.killpg(proc.pid, signal.SIGKILL)
                killed_at = counts
                break
            time.sleep(0.2)
        proc.wait()
    wall = time.monotonic() - started
    gone = wait_workers_gone(run_dir)
    return {"exit": proc.returncode, "wall_s": round(wall, 2), "kill_target": target,
            "killed": bool(killed_at), "at_kill": killed_at, "workers_gone_after_s": gone}


def wait_workers_gone(run_dir: Path, limit_s: float = 30.0) -> float | None:
    """Seconds until no worker of a running job is alive any more (they watch the killed orchestrator)."""
    from kernellab.run.processes import process_alive

    started = time.monotonic()
    path = run_dir / "results.sqlite"
    while time.monotonic() - started < limit_s:
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
            rows = conn.execute("SELECT worker_pid, worker_started FROM jobs WHERE status = 'running'").fetchall()
            conn.close()
        except sqlite3.Error:
            rows = []
        if not any(pid is not None and process_alive(pid, started_at) for pid, started_at in rows):
            return round(time.monotonic() - started, 2)
        time.sleep(0.2)
    return None


# ------------------------------------------------------------------------------------ reading a run


def job_table(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Per job key: status, GPU, tries, the final verdict's status, correctness and speedup vs eager
    (point and 95% interval from the candidate's timing CIs)."""
    from kernellab.score.store import Store

    out: dict[str, dict[str, Any]] = {}
    retimed = _retimed(run_dir)
    with Store.open(run_dir, create=False) as store:
        run = store.latest_run()
        jobs = {j.id: j for j in store.jobs(run.id)}
        finals = {a.job_id: a for a in store.attempts(run_id=run.id) if a.final}
        for job in jobs.values():
            verdict = finals[job.id].verdict if job.id in finals else None
            out[job.key] = {"status": job.status, "gpu": job.gpu, "worker": job.worker, "tries": job.tries,
                            "error": job.error, **verdict_facts(verdict), "retime": retimed.get(job.id)}
    return out


def _retimed(run_dir: Path) -> dict[int, dict[str, Any]]:
    """Per job id, the finalists' re-timing (``--retime-rounds``): the geometric mean of the rounds'
    speedups and its 95% interval over the rounds, when the campaign made one."""
    from kernellab.run.scheduler import FINALISTS_FILE

    try:
        document = json.loads((run_dir / FINALISTS_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return {e["job_id"]: {"speedup": e["speedup_vs_eager_geomean"], "ci": e["speedup_vs_eager_ci95"],
                          "rounds": len(e.get("samples") or [])}
            for e in document.get("finalists", []) if e.get("speedup_vs_eager_ci95")}


def verdict_facts(verdict: dict[str, Any] | None) -> dict[str, Any]:
    if not verdict:
        return {"verdict": None, "correct": None, "failed_stage": None, "speedup": None, "ci": None, "timings": 0}
    point, lo, hi = [], [], []
    for t in verdict.get("timings") or []:
        eager, cand, ci = t.get("eager_us"), t.get("candidate_us"), t.get("ci95_us")
        if not eager or not cand or not ci or not ci[0] or not ci[1]:
            continue
        point.append(eager / cand)
        lo.append(eager / ci[1])
        hi.append(eager / ci[0])
    holdout = (verdict.get("holdout") or {}).get("correct")
    return {"verdict": verdict.get("status"), "correct": verdict.get("correct"), "holdout_correct": holdout,
            "failed_stage": verdict.get("failed_stage"), "speedup": _geo(point),
            "ci": [_geo(lo), _geo(hi)] if point else None, "timings": len(point)}


def _geo(xs: list[float]) -> float | None:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summarize_run(run_dir: Path) -> dict[str, Any]:
    table = job_table(run_dir)
    by_status: dict[str, int] = {}
    by_verdict: dict[str, int] = {}
    by_gpu: dict[str, int] = {}
    for row in table.values():
        by_status[row["status"]] = by_status.get(row["status"], 0) + 1
        by_verdict[str(row["verdict"])] = by_verdict.get(str(row["verdict"]), 0) + 1
        by_gpu[str(row["gpu"])] = by_gpu.get(str(row["gpu"]), 0) + 1
    return {"run_dir": str(run_dir), "jobs": len(table), "by_status": by_status, "by_verdict": by_verdict,
            "correct": sum(1 for r in table.values() if r["correct"]),
            "timed": sum(1 for r in table.values() if r["speedup"] is not None),
            "jobs_per_gpu": by_gpu, "retried": sum(1 for r in table.values() if r["tries"] > 1)}


# ------------------------------------------------------------------------------------ compare


def compare(a: Path, b: Path) -> dict[str, Any]:
    ta, tb = job_table(run_folder(a)), job_table(run_folder(b))
    rows, problems = [], []
    if set(ta) != set(tb):
        problems.append(f"job keys differ: only in A {sorted(set(ta) - set(tb))}, only in B {sorted(set(tb) - set(ta))}")
    for key in sorted(set(ta) & set(tb)):
        x, y = ta[key], tb[key]
        same_status = x["status"] == y["status"]
        same_verdict = (x["verdict"], x["correct"], x.get("holdout_correct")) == \
                       (y["verdict"], y["correct"], y.get("holdout_correct"))
        overlap = None
        both_passed = x["verdict"] == y["verdict"] == "passed"
        # Both re-timed over rounds: their interval carries run-to-run variation; else the verdicts'.
        interval = "retime" if x.get("retime") and y.get("retime") else "verdict"
        if interval == "retime":
            x, y = {**x, **x["retime"]}, {**y, **y["retime"]}
        if both_passed and x["ci"] and y["ci"]:
            overlap = x["ci"][0] <= y["ci"][1] and y["ci"][0] <= x["ci"][1]
        elif both_passed and (x["ci"] or y["ci"]):
            overlap = False  # timed in one run only (a kernel that failed is not compared on speed)
        row = {"job": key, "status": [x["status"], y["status"]], "verdict": [x["verdict"], y["verdict"]],
               "correct": [x["correct"], y["correct"]], "speedup": [x["speedup"], y["speedup"]],
               "ci": [x["ci"], y["ci"]], "interval": interval, "same_verdict": same_status and same_verdict,
               "ci_overlap": overlap}
        rows.append(row)
        if not row["same_verdict"]:
            problems.append(f"{key}: verdict {x['status']}/{x['verdict']}/{x['correct']} vs "
                            f"{y['status']}/{y['verdict']}/{y['correct']}")
        if overlap is False:
            problems.append(f"{key}: speedup {_fmt(x)} vs {_fmt(y)} (intervals do not overlap)")
    timed = [r for r in rows if r["ci_overlap"] is not None]
    ratios = [r["speedup"][0] / r["speedup"][1] for r in timed if r["speedup"][0] and r["speedup"][1]]
    off = sorted(abs(math.log(q)) for q in ratios)
    return {"a": str(a), "b": str(b), "jobs": [len(ta), len(tb)], "same_keys": set(ta) == set(tb),
            "same_verdicts": sum(1 for r in rows if r["same_verdict"]), "compared": len(rows),
            "timed_both": len(timed), "ci_overlap": sum(1 for r in timed if r["ci_overlap"]),
            "intervals_from_retime": sum(1 for r in timed if r["interval"] == "retime"),
            "speedup_ratio_geomean": _geo(ratios), "speedup_ratio_range": [min(ratios), max(ratios)] if ratios else None,
            # how far apart the two runs' speedups are, whatever the intervals say (they hold the
            # candidate's sampling error only: eager's own run-to-run change is not in them)
            "within_pct": {str(p): sum(1 for d in off if d <= math.log1p(p / 100)) for p in (1, 2, 5)},
            "median_abs_diff_pct": round(100 * math.expm1(off[len(off) // 2]), 3) if off else None,
            "task_shared_shift": task_shared_shift(rows),
            "ok": not problems, "problems": problems, "rows": rows}


def task_shared_shift(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """How much of the A/B difference the finalists of one task share: over tasks with two timed
    jobs, the correlation of their log ratios and the spread of their mean (shared) and half
    difference (own). A shared part well above the own one points at what a task's jobs have in
    common between runs, such as one eager time per run."""
    by_task: dict[str, list[float]] = {}
    for r in rows:
        a, b = r["speedup"]
        if a and b and r["ci_overlap"] is not None:
            by_task.setdefault(r["job"].split("|")[0], []).append(math.log(a / b))
    pairs = [xs[:2] for xs in by_task.values() if len(xs) >= 2]
    if len(pairs) < 3:
        return None
    first, second = [p[0] for p in pairs], [p[1] for p in pairs]
    try:
        correlation = statistics.correlation(first, second)
    except statistics.StatisticsError:  # one side constant
        correlation = None
    return {"tasks": len(pairs), "correlation": correlation,
            "shared_sd_pct": 100 * statistics.pstdev([(x + y) / 2 for x, y in pairs]),
            "own_sd_pct": 100 * statistics.pstdev([(x - y) / 2 for x, y in pairs])}


def _fmt(row: dict[str, Any]) -> str:
    if row["speedup"] is None:
        return "untimed"
    return f"{row['speedup']:.3f} [{row['ci'][0]:.3f}, {row['ci'][1]:.3f}]"


def print_comparison(result: dict[str, Any]) -> None:
    print(f"{'job':58} {'verdict A':>10} {'verdict B':>10} {'speedup A':>26} {'speedup B':>26}  same")
    for r in result["rows"]:
        a, b = ({"speedup": r["speedup"][i], "ci": r["ci"][i]} for i in (0, 1))
        same = "yes" if r["same_verdict"] and r["ci_overlap"] is not False else "NO"
        print(f"{r['job'][:58]:58} {r['verdict'][0]!s:>10} {r['verdict'][1]!s:>10} {_fmt(a):>26} "
              f"{_fmt(b):>26}  {same}")
    print(f"jobs {result['jobs'][0]} vs {result['jobs'][1]} (same keys: {result['same_keys']}); same verdicts "
          f"{result['same_verdicts']}/{result['compared']}; speedup intervals overlap {result['ci_overlap']}/"
          f"{result['timed_both']} timed in both; speedup ratio A/B geomean "
          f"{'-' if result['speedup_ratio_geomean'] is None else round(result['speedup_ratio_geomean'], 4)}; "
          f"within 1/2/5%: {'/'.join(str(v) for v in result['within_pct'].values())}; "
          f"median difference {result['median_abs_diff_pct']}%")
    shift = result.get("task_shared_shift")
    if shift:
        corr = "-" if shift["correlation"] is None else f"{shift['correlation']:.2f}"
        print(f"a task's jobs moved together: correlation {corr} over {shift['tasks']} tasks; shared sd "
              f"{shift['shared_sd_pct']:.2f}%, own sd {shift['own_sd_pct']:.2f}%")
    for p in result["problems"]:
        print(f"  MISMATCH {p}")
    print("OK" if result["ok"] else "MISMATCH")


def run_folder(path: Path) -> Path:
    """A phase folder (holding run/) or the run folder itself."""
    return path / "run" if (path / "run" / "results.sqlite").exists() else path


# ------------------------------------------------------------------------------------ report, packing


def render(run_dir: Path, screenshot: Path | None) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    page = run_dir / "report.html"
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "kernellab.cli.main", "report", str(run_dir), "--format", "html",
                           "--out", str(page)], capture_output=True, text=True, env=env, check=False, cwd=ROOT)
    out: dict[str, Any] = {"report": str(page), "report_exit": proc.returncode, "report_s": round(time.monotonic() - started, 2)}
    if proc.returncode != 0:
        out["report_error"] = proc.stderr.strip()[-2000:]
        return out
    md = subprocess.run([sys.executable, "-m", "kernellab.cli.main", "report", str(run_dir), "--format", "md"],
                        capture_output=True, text=True, env=env, check=False, cwd=ROOT)
    out["report_md_exit"] = md.returncode
    (run_dir / "report.md").write_text(md.stdout)
    if screenshot is not None:
        sys.path.insert(0, str(ROOT / "tests" / "report"))
        try:
            from report_browser import find_chromium
            from report_browser import screenshot as take
        except ImportError:
            out["screenshot"] = "skipped: tests/report/report_browser.py not found"
            return out
        browser = find_chromium()
        if browser is None:
            out["screenshot"] = "skipped: no chromium here (render later with --phase render)"
        else:
            try:
                out["screenshot"] = str(take(browser, page, screenshot))
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                out["screenshot"] = f"failed: {exc}"
    return out


def checkpoint(run_dir: Path) -> None:
    """Fold the WAL into results.sqlite so the file alone is the whole store."""
    conn = sqlite3.connect(run_dir / "results.sqlite", timeout=30)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def pack(folder: Path, tarball: Path, limit_mb: float = 15.5) -> dict[str, Any]:
    """``folder`` (a phase folder) without the jobs' own solve folders; artifacts dropped if too big."""
    run_dir = run_folder(folder)
    checkpoint(run_dir)
    tarball.parent.mkdir(parents=True, exist_ok=True)

    def keep(skip_artifacts: bool):
        def f(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
            parts = Path(info.name).parts
            if "jobs" in parts[:3] or parts[-1].endswith(("-wal", "-shm")) or "__pycache__" in parts:
                return None
            if skip_artifacts and "artifacts" in parts[:3]:
                return None
            return info
        return f

    for skip in (False, True):
        with tarfile.open(tarball, "w:gz") as tar:
            tar.add(folder, arcname=folder.name, filter=keep(skip))
        size = tarball.stat().st_size
        if size <= limit_mb * (1 << 20):
            return {"tarball": str(tarball), "bytes": size, "artifacts": not skip}
    return {"tarball": str(tarball), "bytes": size, "artifacts": False, "over_limit": True}


# ------------------------------------------------------------------------------------ phases


def run_phase(args: argparse.Namespace, out: Path, interrupted: bool) -> dict[str, Any]:
    run_dir = out / "run"
    recorded = out / "recorded"
    tasks = choose_tasks(args.tasks_count, args.device == "cpu")
    resuming = (run_dir / "results.sqlite").exists()
    if not resuming:
        if out.exists() and any(out.iterdir()):
            raise SystemExit(f"{out} exists and is not empty (and holds no campaign to continue)")
        out.mkdir(parents=True, exist_ok=True)
    origins = write_recorded(recorded, tasks)
    argv = campaign_argv(args, tasks, recorded, run_dir)
    env = campaign_env(args)
    (out / "command.txt").write_text(" ".join(argv[1:]) + "\n")
    logs = out / "campaign.log"
    total = len(tasks) * 2
    doc: dict[str, Any] = {"phase": "interrupted" if interrupted else "uninterrupted", "tasks": tasks,
                           "recorded": origins, "jobs_expected": total, "command": argv[1:],
                           "device": args.device or "gpu", "gpus": args.gpus, "agent_concurrency": args.agent_concurrency,
                           "gpu_lock": args.gpu_lock if args.device != "cpu" else None,
                           "case_cache_gb": env.get("KERNELLAB_CASE_CACHE_GB"), "gpu_names": gpu_names()}
    started = time.monotonic()

    def timeout() -> float | None:
        """``--timeout``, cut to what ``--deadline`` leaves once the report and the tarball are made."""
        if args.deadline is None:
            return args.timeout
        left = max(1.0, args.deadline - (time.monotonic() - started) - FINISH_MARGIN_S)
        return left if args.timeout is None else min(args.timeout, left)

    if resuming:
        log(f"{run_dir} holds this campaign already: resuming it")
        doc["continued_earlier_phase"] = True
        if (out / "phase.json").exists():  # what the earlier call of this phase did (its SIGKILL, say)
            doc["earlier"] = json.loads((out / "phase.json").read_text())
        doc["resume"] = run_once(argv + ["--resume"], env, logs, timeout())
    elif interrupted:
        log(f"{total} jobs; SIGKILL once {args.kill_at:.0%} are finished")
        doc["first"] = run_killed(argv, env, logs, run_dir, args.kill_at, total, timeout())
        log(f"killed: {doc['first']}")
        (out / "phase.json").write_text(json.dumps(doc, indent=1) + "\n")  # the kill, whatever comes next
        doc["resume"] = run_once(argv + ["--resume"], env, logs, timeout())
        log(f"resumed: {doc['resume']}")
    else:
        log(f"{total} jobs, uninterrupted")
        doc["run"] = run_once(argv, env, logs, timeout())
        log(f"finished: {doc['run']}")
    doc["wall_s"] = round(time.monotonic() - started, 2)
    doc["summary"] = summarize_run(run_dir) if (run_dir / "results.sqlite").exists() else None
    log(f"summary: {json.dumps(doc['summary'])}")
    if not args.no_report and doc["summary"]:
        doc["render"] = render(run_dir, args.screenshot)
    (out / "phase.json").write_text(json.dumps(doc, indent=1) + "\n")
    if args.pack:
        doc["pack"] = pack(out, args.pack / f"{out.name}.tgz")
        (out / "phase.json").write_text(json.dumps(doc, indent=1) + "\n")
    return doc


def gpu_names() -> list[str]:
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=index,name", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=30, check=True)
        return [line.strip() for line in done.stdout.splitlines() if line.strip()]
    except (OSError, subprocess.SubprocessError):
        return []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phase", required=True, choices=("uninterrupted", "interrupted", "compare", "all", "render"))
    parser.add_argument("--out", type=Path, help="the phase's folder (new, or one whose campaign is continued)")
    parser.add_argument("--a", type=Path, help="compare/render: a phase folder or run folder")
    parser.add_argument("--b", type=Path, help="compare: the other")
    parser.add_argument("--json", type=Path, help="write what was measured here")
    parser.add_argument("--tasks-count", type=int, default=40)
    parser.add_argument("--device", choices=("cpu",), default=None, help="cpu: the Triton interpreter")
    parser.add_argument("--gpus", default=None, help="e.g. 0,1 (default: every GPU)")
    parser.add_argument("--agent-concurrency", type=int, default=None, help="default: 4 per GPU, 2 on the CPU")
    parser.add_argument("--gpu-lock", choices=("evaluation", "timing"), default="timing")
    parser.add_argument("--retime-rounds", type=int, default=0,
                        help="re-time the finalists this many rounds at the end (compare then uses their intervals)")
    parser.add_argument("--kill-at", type=float, default=0.5, help="fraction of jobs finished before the SIGKILL")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per kernellab run before it is killed")
    parser.add_argument("--deadline", type=float, default=None,
                        help="seconds for the whole phase: its kernellab runs are cut to leave time for the "
                             "report and --pack (a run cut short goes on with the same command)")
    parser.add_argument("--screenshot", type=Path, default=None, help="PNG of the report (needs chromium)")
    parser.add_argument("--no-report", action="store_true")
    parser.add_argument("--pack", type=Path, default=None,
                        help="a folder: PACK/<phase folder>.tgz, the phase folder without the jobs' solve folders")
    args = parser.parse_args()
    if args.agent_concurrency is None:
        args.agent_concurrency = 2 if args.device == "cpu" else 4 * (len(args.gpus.split(",")) if args.gpus else 1)

    if args.phase == "compare":
        if args.a is None or args.b is None:
            parser.error("--phase compare needs --a and --b")
        result = compare(args.a, args.b)
        print_comparison(result)
        if args.json:
            args.json.write_text(json.dumps(result, indent=1) + "\n")
        return 0 if result["ok"] else 1
    if args.phase == "render":
        if args.a is None:
            parser.error("--phase render needs --a")
        result = render(run_folder(args.a), args.screenshot)
        print(json.dumps(result, indent=1))
        return 0 if result.get("report_exit") == 0 else 1
    if args.out is None:
        parser.error(f"--phase {args.phase} needs --out")
    if args.phase in ("uninterrupted", "interrupted"):
        doc = run_phase(args, args.out, args.phase == "interrupted")
        ok = doc["summary"] is not None and doc["summary"]["by_status"].get("pending", 0) == 0 \
            and doc["summary"]["by_status"].get("running", 0) == 0
    else:
        started = time.monotonic()
        screenshot, args.screenshot = args.screenshot, None
        first = run_phase(args, args.out / "uninterrupted", False)
        args.screenshot = screenshot
        second = run_phase(args, args.out / "interrupted", True)
        result = compare(args.out / "uninterrupted", args.out / "interrupted")
        print_comparison(result)
        doc = {"phase": "all", "wall_s": round(time.monotonic() - started, 2), "uninterrupted": first,
               "interrupted": second, "compare": {k: v for k, v in result.items() if k != "rows"},
               "compare_rows": result["rows"]}
        ok = result["ok"]
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps({k: doc[k] for k in ("phase", "wall_s") if k in doc} |
                     {"summary": doc.get("summary")} if "summary" in doc else {"phase": doc["phase"],
                                                                               "wall_s": doc["wall_s"]}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
