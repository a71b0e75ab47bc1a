"""Do two separate evaluations of the same kernel report the same time?

Each candidate (the suite's own Triton baseline kernels, plus the RMSNorm example) is evaluated in
two separate sessions; for every seen config × dtype the two medians are compared. Prints a table
and writes JSON; the headline is the median over kernels of the per-kernel median difference.

    python benchmarks/eval_repeatability.py
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from kernellab.evaluate.options import EvalOptions
from kernellab.evaluate.session import EvalSession
from kernellab.evaluate.verdict import Stage
from kernellab.tasks.load import SUITE_ROOT, load_task

PAIRS = [
    ("normalization/rmsnorm", "examples/rmsnorm_triton.py"),
    ("matmul/matmul_nt", None),
    ("quantization/w8a8_matmul", None),
    ("fusion/softcap_softmax", None),
    ("conv_pool/global_avg_pool", None),
    ("optimizer/adamw", None),
]
STAGES = frozenset({Stage.STATIC, Stage.LOAD, Stage.SMOKE, Stage.TIMING})


def timings(task_id: str, candidate: Path) -> dict[str, float]:
    options = EvalOptions(stages=STAGES, configs="seen", timing_budget_s=1.0, compile_baseline=False)
    with EvalSession(load_task(task_id), options) as session:
        verdict = session.evaluate(candidate)
    if verdict.status.value != "passed":
        raise RuntimeError(f"{task_id}: {verdict.status.value}: {verdict.error}")
    return {f"{t.config} {t.dtype} {t.phase}": t.candidate_us for t in verdict.timings}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/results/eval_repeatability.json")
    args = parser.parse_args()
    rows = []
    for task_id, candidate in PAIRS:
        path = Path(candidate) if candidate else SUITE_ROOT / task_id / "baseline.py"
        try:
            first, second = timings(task_id, path), timings(task_id, path)
        except RuntimeError as exc:
            print(f"skipped: {exc}")
            continue
        diffs = {k: abs(second[k] / first[k] - 1) * 100 for k in first if k in second and first[k] > 0}
        row = {"task": task_id, "candidate": str(path), "configs": len(diffs),
               "median_diff_pct": statistics.median(diffs.values()), "max_diff_pct": max(diffs.values()),
               "first_us": first, "second_us": second}
        rows.append(row)
        print(f"{task_id:32s} {row['configs']:3d} configs  median Δ {row['median_diff_pct']:5.2f}%  "
              f"max Δ {row['max_diff_pct']:5.2f}%", flush=True)
    headline = statistics.median(r["median_diff_pct"] for r in rows) if rows else None
    print(f"\nmedian over {len(rows)} kernels of the per-kernel median difference: "
          f"{headline:.2f}%" if rows else "no kernel evaluated")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"kernels": rows, "median_diff_pct": headline}, indent=1))


if __name__ == "__main__":
    main()
