"""KernelBench compatibility: load every problem of an unmodified KernelBench checkout, and optionally
evaluate each reference as its own candidate (``--policy off``), as ``kernellab eval`` does.

    python benchmarks/kernelbench_compat.py /path/to/KernelBench/KernelBench [--levels 1 2 3]
        [--eval] [--device cpu|cuda] [--cpu-max-elements N] [--time-cap S] [--shard i/n]

The checkout stays where the user keeps it; nothing of it is copied here (the candidate is the
reference file itself, judged by its ``Model``). A problem too large for the machine is recorded as
``too_large`` with the one line ``kernellab eval`` prints (exit 2 there). ``--time-cap`` stops starting
new problems after that many seconds, and the JSON says which were not reached: on a shared machine
the run covers what it can and says so. The JSON is rewritten after every problem, so a run that is
stopped still leaves its rows. Prints one line per problem that does not pass, and a summary.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from kernellab.evaluate import gpu_sharing
from kernellab.evaluate.machine_fit import TooLargeError
from kernellab.evaluate.options import EvalOptions
from kernellab.evaluate.session import EvalSession
from kernellab.evaluate.verdict import Stage
from kernellab.run.scheduler import GpuLock, physical_gpu
from kernellab.tasks.load import load_task
from kernellab.tasks.materialize import load_problem
from kernellab.tasks.model import Policy, TaskError, Visibility

STAGE_SETS = {
    # everything ``kernellab eval`` runs (timing is null on the CPU; sanitize runs on a GPU only)
    "all": frozenset(Stage),
    "correctness": frozenset(Stage) - {Stage.TIMING, Stage.SANITIZE},
    # the GPU run within a few minutes: the seen config checked three times on fresh inputs, the
    # derived small config, two identical calls; no stability variants (eight more float64 builds each)
    "quick": frozenset({Stage.STATIC, Stage.LOAD, Stage.SMOKE, Stage.SHAPE_SWEEP, Stage.DETERMINISM}),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="the KernelBench folder holding level1, level2, ...")
    parser.add_argument("--levels", nargs="+", default=["1", "2", "3"])
    parser.add_argument("--eval", action="store_true", help="also evaluate each reference as its candidate")
    parser.add_argument("--device", default=None, help="cpu | cuda (default: cuda when present)")
    parser.add_argument("--cpu-max-elements", type=int, default=EvalOptions.cpu_max_elements)
    parser.add_argument("--stages", choices=sorted(STAGE_SETS), default="all")
    parser.add_argument("--trials", type=int, default=EvalOptions.trials,
                        help="fresh input sets per seen config in the shape sweep")
    parser.add_argument("--time-cap", type=float, default=None, help="seconds; no new problem starts after it")
    parser.add_argument("--shard", default="0/1", help="i/n: every n-th problem from the i-th")
    parser.add_argument("--out", default="benchmarks/results/kernelbench_compat.json")
    args = parser.parse_args()
    index, count = (int(x) for x in args.shard.split("/"))
    problems = [(level, path) for level in args.levels
                for path in sorted((args.root / f"level{level}").glob("*.py"), key=_problem_number)]
    problems = problems[index::count]
    options = EvalOptions(policy=Policy.OFF, stages=STAGE_SETS[args.stages], device=args.device,
                          cpu_max_elements=args.cpu_max_elements, trials=args.trials)
    lock = _share_the_gpu(count) if args.eval and _device(args.device) == "cuda" else None
    started = time.monotonic()
    rows: list[dict] = []
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="kernelbench-compat-"))
    try:
        for level, path in problems:
            row = {"problem": f"level{level}/{path.name}"}
            if args.time_cap is not None and time.monotonic() - started > args.time_cap:
                row["status"] = "not_reached"
            else:
                row.update(_one(path, options if args.eval else None, scratch, lock))
            rows.append(row)
            if not row.get("loaded", True) or (args.eval and row.get("status") not in ("passed", "not_reached")):
                print(f"{row['problem']:60s} {row.get('status', 'not loaded'):12s} {(row.get('error') or '')[:160]}",
                      flush=True)
            _write(out, rows, args, time.monotonic() - started)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    summary = _summary(rows)
    print("\n" + ", ".join(f"{k} {v}" for k, v in summary.items()), flush=True)


def _device(device: str | None) -> str:
    if device is not None:
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _share_the_gpu(shards: int) -> GpuLock:
    """Shards side by side on one GPU share it as a campaign's workers do: each evaluation holds the
    GPU's lock shared, a timing takes it exclusively, and an evaluation that ran out of device memory
    beside the others is judged again once they have ended (``evaluate/gpu_sharing.py``). Without
    it, KernelBench's multi-GB problems exhaust an 80 GB GPU and the shortage reads as a verdict."""
    os.environ.setdefault(gpu_sharing.SHARED_BY_ENV, str(shards))
    lock = GpuLock(physical_gpu(0))
    gpu_sharing.set_guards(lock.exclusive, lock.alone)
    return lock


def _one(path: Path, options: EvalOptions | None, scratch: Path, lock: GpuLock | None = None) -> dict:
    row: dict = {}
    began = time.perf_counter()
    try:
        task = load_task(path)
        small = task.configs_of(Visibility.SMALL)
        row.update(loaded=True, small=small[0].label if small else None,
                   footprint=load_problem(task, task.configs[0]).footprint_numel())
        if options is not None:
            candidate = path  # the reference itself, judged by its Model (a copy needs a ModelNew)
            if lock is not None:
                lock.begin("shared")
            try:
                with EvalSession(task, options) as session:
                    verdict = session.evaluate(candidate)
            finally:
                if lock is not None:
                    gc.collect()  # the session's cases, then their memory back to the GPU
                    gpu_sharing.give_back_memory()
                    lock.end()
            row.update(status=verdict.status.value, correct=verdict.correct, error=verdict.error,
                       failed_stage=verdict.failed_stage.value if verdict.failed_stage else None,
                       configs=sorted({c.config for s in verdict.stages for c in s.configs}))
    except TooLargeError as exc:
        row.update(status="too_large", error=str(exc))
    except TaskError as exc:
        row.update(loaded=row.get("loaded", False), status=row.get("status", "not_loaded"), error=str(exc))
    row["seconds"] = round(time.perf_counter() - began, 1)
    return row


def _summary(rows: list[dict]) -> dict[str, int]:
    summary = {"problems": len(rows), "loaded": sum(bool(r.get("loaded")) for r in rows)}
    for row in rows:
        if "status" in row:
            summary[row["status"]] = summary.get(row["status"], 0) + 1
    return summary


def _write(out: Path, rows: list[dict], args, elapsed: float) -> None:
    document = {"args": {k: str(v) for k, v in vars(args).items()}, "elapsed_s": round(elapsed, 1),
                "summary": _summary(rows), "rows": rows}
    tmp = out.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(document, indent=1))
    tmp.replace(out)


def _problem_number(path: Path) -> tuple[int, str]:
    head = path.name.split("_", 1)[0]
    return (int(head) if head.isdigit() else 1 << 30, path.name)


if __name__ == "__main__":
    main()
