"""A candidate that is the task's own reference must come out at 1.00× eager.

Each task's ``reference.py`` is evaluated as its own candidate (policy off, seen configs, timing
only): the child times it exactly as it times any candidate, the judge times the same code as the
eager baseline. Any systematic departure of ``speedup_vs_eager`` from 1 is a bias of the harness
(two timing loops that differ), not of the kernel, and would be credited to every candidate.
Prints per task the median and range of the rows' speedups and writes JSON; the headline is the
median over all rows. (Both are timed in rounds of fresh values on the same slots, the candidate in
its child and the baseline by the judge, with the judge's checks between rounds in both: see
``evaluate/rounds.py`` for why the baselines are not timed back to back.)

    python benchmarks/null_candidate_speedup.py [--tasks a/b,c/d] [--out benchmarks/results/null_candidate_speedup.json]

On a machine without CUDA it says so and exits 0 (there is no timing to compare).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

from kernellab.evaluate.options import EvalOptions
from kernellab.evaluate.session import EvalSession
from kernellab.evaluate.verdict import Stage
from kernellab.tasks.load import load_task
from kernellab.tasks.model import Policy

TASKS = ["normalization/rmsnorm", "fusion/softcap_softmax", "matmul/matmul_nt", "conv_pool/global_avg_pool",
         "optimizer/adamw"]
STAGES = frozenset({Stage.STATIC, Stage.LOAD, Stage.SMOKE, Stage.TIMING})


def speedups(task_id: str) -> dict[str, float]:
    task = load_task(task_id)
    options = EvalOptions(policy=Policy.OFF, stages=STAGES, configs="seen", compile_baseline=False)
    with EvalSession(task, options) as session:
        verdict = session.evaluate(task.root / "reference.py")
    if verdict.status.value != "passed":
        raise RuntimeError(f"{task_id}: {verdict.status.value}: {verdict.error}")
    return {f"{t.config} {t.dtype} {t.phase}": t.speedup_vs_eager for t in verdict.timings
            if t.speedup_vs_eager is not None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(TASKS), help="comma-separated task ids")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/null_candidate_speedup.json"))
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("null_candidate_speedup: no CUDA device here; this benchmark needs a GPU. Nothing measured.")
        return 0
    rows, every = [], []
    for task_id in [t.strip() for t in args.tasks.split(",") if t.strip()]:
        try:
            got = speedups(task_id)
        except RuntimeError as exc:
            print(f"skipped: {exc}", flush=True)
            continue
        values = list(got.values())
        every += values
        rows.append({"task": task_id, "rows": len(values), "median": statistics.median(values),
                     "min": min(values), "max": max(values), "speedups": got})
        print(f"{task_id:32s} {len(values):3d} rows  median {statistics.median(values):.3f}×  "
              f"range {min(values):.3f}–{max(values):.3f}", flush=True)
    headline = statistics.median(every) if every else None
    print(f"\nmedian over {len(every)} rows: {headline:.3f}×" if every else "no task evaluated")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"tasks": rows, "median_speedup": headline, "rows": len(every)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
