"""Does a timing's 95% CI cover what a separate timing of the same kernel reports?

    python benchmarks/timing_reproducibility.py [--runs 6] [--budget-s 0.3] [--out benchmarks/results/timing_reproducibility.json]
    python benchmarks/timing_reproducibility.py --analyse benchmarks/results/timing_reproducibility.json

Each run is a fresh process (its own CUDA context and allocations) that times every kernel below with
``kernellab.sandbox.clock.time_calls`` under the plan an evaluation uses (L2 flushed, inputs rotated,
1% CI target, ``--budget-s`` of timing). The raw samples and the batch size of every timing are kept,
so the CIs can be computed afterwards in more than one way:

- ``iid``: the percentile bootstrap of the median over single samples;
- ``batches``: the same bootstrap over whole batches (the samples between two synchronisations),
  which keeps the dependence between neighbouring calls that the single-sample bootstrap ignores.

For each kernel and each method it reports the spread of the run medians, the median CI half-width,
how many pairs of runs have overlapping intervals, and how often one run's median lies inside
another's interval. Prints a table and writes JSON (the samples included).
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

from kernellab.sandbox.timing_stats import summarize  # noqa: E402

METHODS = ("iid", "batches")


def kernels(torch: Any) -> dict[str, tuple[Any, list[tuple[Any, ...]]]]:
    """name -> (call(*args), input sets): memory-bound and compute-bound ops at LLM sizes, ≥ 50 µs."""
    dev = "cuda"

    def sets(make, n=3):
        return [make() for _ in range(n)]

    f = torch.nn.functional
    return {
        "sum_rows fp32 8192x8192": (lambda x: x.sum(-1), sets(lambda: (torch.randn(8192, 8192, device=dev),))),
        "softmax bf16 8192x8192": (lambda x: torch.softmax(x, -1),
                                   sets(lambda: (torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16),))),
        "layer_norm bf16 16384x4096": (lambda x, w, b: f.layer_norm(x, (4096,), w, b),
                                       sets(lambda: (torch.randn(16384, 4096, device=dev, dtype=torch.bfloat16),
                                                     torch.randn(4096, device=dev, dtype=torch.bfloat16),
                                                     torch.randn(4096, device=dev, dtype=torch.bfloat16)))),
        "gelu fp32 64M": (f.gelu, sets(lambda: (torch.randn(64 << 20, device=dev),))),
        "matmul bf16 4096^3": (torch.matmul, sets(lambda: (torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16),
                                                           torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)))),
        "embedding bf16 32000x4096 [16384]": (
            f.embedding, sets(lambda: (torch.randint(0, 32000, (16384,), device=dev),
                                       torch.randn(32000, 4096, device=dev, dtype=torch.bfloat16)))),
        "index_copy bf16 cache 268MB": (
            lambda cache, idx, src: cache.index_copy_(0, idx, src),
            sets(lambda: (torch.zeros(32768, 4096, device=dev, dtype=torch.bfloat16),
                          torch.randperm(32768, device=dev)[:4096], torch.randn(4096, 4096, device=dev,
                                                                                   dtype=torch.bfloat16)))),
    }


def worker(budget_s: float) -> None:
    """One run: time every kernel once, print one JSON line per kernel."""
    import torch

    from kernellab.sandbox.clock import time_calls
    from kernellab.sandbox.timing_stats import TimingPlan

    plan = TimingPlan(budget_s=budget_s)
    for name, (fn, inputs) in kernels(torch).items():
        times = time_calls(lambda i, fn=fn, inputs=inputs: fn(*inputs[i]), len(inputs), plan)
        print(json.dumps({"kernel": name, "samples_us": list(times.samples_us), "batch": times.batch,
                          "stop": times.stop_reason}), flush=True)


def batch_summary(samples: list[float], batch: int, seed: int = 0, resamples: int = 2000):
    """Median and percentile-bootstrap CI of the median, resampling whole batches."""
    x = np.asarray(samples, dtype=np.float64)
    blocks = [x[i:i + batch] for i in range(0, len(x), max(1, batch))]
    rng = np.random.default_rng(seed)
    medians = np.empty(resamples)
    for r in range(resamples):
        pick = rng.integers(0, len(blocks), size=len(blocks))
        medians[r] = np.median(np.concatenate([blocks[i] for i in pick]))
    lo, hi = np.percentile(medians, [2.5, 97.5])
    return float(np.median(x)), float(lo), float(hi)


def analyse(runs: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    rows = []
    for name in [r["kernel"] for r in runs[0]]:
        timings = [next(t for t in run if t["kernel"] == name) for run in runs]
        row: dict[str, Any] = {"kernel": name, "runs": len(timings),
                               "samples": [len(t["samples_us"]) for t in timings]}
        for method in METHODS:
            cis = []
            for t in timings:
                if method == "iid":
                    s = summarize(t["samples_us"])
                    cis.append((s.median, s.ci_low, s.ci_high))
                else:
                    cis.append(batch_summary(t["samples_us"], t["batch"]))
            medians = [c[0] for c in cis]
            pairs = list(itertools.combinations(range(len(cis)), 2))
            overlap = sum(1 for i, j in pairs if cis[i][1] <= cis[j][2] and cis[j][1] <= cis[i][2])
            inside = sum(1 for i in range(len(cis)) for j in range(len(cis))
                         if i != j and cis[j][1] <= medians[i] <= cis[j][2])
            row[method] = {
                "spread_pct": (max(medians) / min(medians) - 1) * 100,
                "half_width_pct": float(np.median([(c[2] - c[1]) / 2 / c[0] * 100 for c in cis])),
                "pairs_overlap": f"{overlap}/{len(pairs)}",
                "median_inside_other": f"{inside}/{len(cis) * (len(cis) - 1)}",
            }
        row["medians_us"] = [round(c, 3) for c in medians]
        rows.append(row)
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    print(f"{'kernel':36} {'spread%':>8} | {'iid ±%':>7} {'overlap':>8} {'inside':>7} | "
          f"{'batch ±%':>8} {'overlap':>8} {'inside':>7}")
    for r in rows:
        a, b = r["iid"], r["batches"]
        print(f"{r['kernel']:36} {a['spread_pct']:8.2f} | {a['half_width_pct']:7.3f} {a['pairs_overlap']:>8} "
              f"{a['median_inside_other']:>7} | {b['half_width_pct']:8.3f} {b['pairs_overlap']:>8} "
              f"{b['median_inside_other']:>7}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--budget-s", type=float, default=0.3)
    parser.add_argument("--out", default="benchmarks/results/timing_reproducibility.json")
    parser.add_argument("--analyse", help="recompute the table from a JSON this script wrote")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.budget_s)
        return 0
    if args.analyse:
        data = json.loads(Path(args.analyse).read_text())
        print_table(analyse(data["runs"]))
        return 0
    runs, started = [], time.perf_counter()
    for i in range(args.runs):
        proc = subprocess.run([sys.executable, __file__, "--worker", "--budget-s", str(args.budget_s)],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            print(proc.stderr[-2000:], file=sys.stderr)
            return 1
        runs.append([json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")])
        print(f"run {i + 1}/{args.runs} done, {time.perf_counter() - started:.0f} s", flush=True)
    rows = analyse(runs)
    print_table(rows)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"budget_s": args.budget_s, "rows": rows, "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
