"""Where the sanitize stage's seconds go: the sanitized process with and without each tool.

    python benchmarks/sanitize_cost.py --task normalization/rmsnorm --candidate examples/rmsnorm_triton.py \
        --out benchmarks/results/sanitize_cost.json [--keep DIR]

For one task and candidate it runs the process the sanitize stage runs (``sandbox.sanitize_target``,
on every small and edge config × dtype, forward and backward) in these settings, each printing
the seconds from launch to each of the process's marks (interpreter up, torch imported, CUDA
context, candidate imported, every call made, exit):

- ``plain, cold``: no tool, an empty Triton cache (the kernels compile);
- ``plain, warm``: no tool, the cache the cold run filled (what the stage finds: the checks compiled);
- ``<tool>, warm``: each tool alone;
- ``parallel, warm``: the three tools at once, as the stage runs them;
- ``parallel, cold``: the three at once on an empty cache (compiling under the tools).

``--keep DIR`` copies each tool's report there (real output of the installed version, for the
parser's tests).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kernellab.evaluate.stages.sanitize import items
from kernellab.sandbox.forkserver import kept_env
from kernellab.sandbox.sanitizer import TOOLS, SanitizeJob, find_sanitizer, run_sanitizers, target_env
from kernellab.tasks.load import load_task
from kernellab.tasks.materialize import reference_file


def _env(folder: Path) -> dict[str, str]:
    env = kept_env()
    env.update(TRITON_CACHE_DIR=str(folder / "triton"), TORCH_EXTENSIONS_DIR=str(folder / "torch_extensions"))
    return env


def _plain(job: SanitizeJob, env: dict[str, str], folder: Path) -> dict[str, float]:
    """The target without any tool: what the process costs by itself."""
    own = folder / f"plain-{time.monotonic_ns()}"
    own.mkdir(parents=True)
    spec = {"candidate": str(job.candidate), "source": job.source, "where": job.where, "items": job.items,
            "seed": job.seed, "fp32_precision": job.fp32_precision, "status_path": str(own / "marks.jsonl"),
            "log_path": str(own / "candidate.log")}
    (own / "job.json").write_text(json.dumps(spec))
    started = time.time()
    code = subprocess.call([sys.executable, "-m", "kernellab.sandbox.sanitize_target", str(own / "job.json")],
                           env=target_env(env, own), cwd=own, stdin=subprocess.DEVNULL)
    total = time.time() - started
    phases = {}
    for line in (own / "marks.jsonl").read_text().splitlines():
        mark = json.loads(line)
        if mark["phase"] != "item":
            phases.setdefault(mark["phase"], round(mark["t"] - started, 3))
    phases["total"] = round(total, 3)
    phases["exit"] = code
    return phases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="normalization/rmsnorm")
    parser.add_argument("--candidate", default="examples/rmsnorm_triton.py")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--keep", type=Path, help="copy each tool's report here")
    parser.add_argument("--quick", action="store_true", help="only: plain, cold (compiles); parallel, warm")
    args = parser.parse_args()
    task = load_task(args.task)
    calls = items(task, task.dtypes)
    job = SanitizeJob(candidate=Path(args.candidate).resolve(), source=task.source, where=str(reference_file(task)),
                      items=calls, fp32_precision=task.fp32_precision)
    tool = find_sanitizer()
    version = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout.strip() if tool else None
    print(f"{task.id} / {args.candidate}: {len(calls)} calls; compute-sanitizer {tool}: {version}")
    rows: dict[str, dict] = {}
    work = Path(tempfile.mkdtemp(prefix="sanitize-cost-"))
    warm, cold = work / "warm", work / "cold"
    rows["plain, cold"] = _plain(job, _env(warm), warm)
    if not args.quick:
        rows["plain, warm"] = _plain(job, _env(warm), warm)
    for name in () if args.quick else TOOLS:
        run = run_sanitizers(job, _env(warm), warm / f"alone-{name}", 600, tools=(name,))[0]
        rows[f"{name}, warm"] = dict(run.phases(), outcome=run.outcome, line=run.describe())
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            if run.log and run.log.exists():
                shutil.copy(run.log, args.keep / f"{Path(args.candidate).stem}-{name}.txt")
    if not args.quick:
        fast = SanitizeJob(**{**job.__dict__, "fast_exit": True})
        started = time.time()
        runs = run_sanitizers(fast, _env(warm), warm / "parallel-fast-exit", 600)
        rows["parallel, warm, os._exit"] = {"total": round(time.time() - started, 3),
                                            **{r.tool: dict(r.phases(), outcome=r.outcome) for r in runs}}
    started = time.time()
    runs = run_sanitizers(job, _env(warm), warm / "parallel", 600)
    rows["parallel, warm"] = {"total": round(time.time() - started, 3),
                              **{r.tool: dict(r.phases(), outcome=r.outcome, line=r.describe()) for r in runs}}
    for run in runs if args.keep and args.quick else ():
        args.keep.mkdir(parents=True, exist_ok=True)
        if run.log and run.log.exists():
            shutil.copy(run.log, args.keep / f"{Path(args.candidate).stem}-{run.tool}.txt")
    started = time.time()
    if not args.quick:
        runs = run_sanitizers(job, _env(cold), cold / "parallel", 600)
        rows["parallel, cold"] = {"total": round(time.time() - started, 3),
                                  **{r.tool: dict(r.phases(), outcome=r.outcome) for r in runs}}
    for name, row in rows.items():
        print(f"{name:16s} {json.dumps(row)}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"task": task.id, "candidate": args.candidate, "calls": len(calls),
                                        "sanitizer": tool, "version": version, "rows": rows}, indent=2))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
