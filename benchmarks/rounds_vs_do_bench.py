"""The timing stage's rounds against ``triton.testing.do_bench``, on the same eager kernels.

An evaluation times everything in rounds of fresh values (``evaluate/rounds.py``): a round of calls
on the slots, each flushed and bracketed by events, then the judge's refresh and checks. This times
a task's eager reference that way (``LocalRounds``, exactly as a baseline is timed) and with
``do_bench`` (its own flush, ``return_mode="median"``) on one of the same input sets, in interleaved
rounds (which goes first alternates), and reports the median of the rounds' ratios.

    python benchmarks/rounds_vs_do_bench.py [--rounds 6] [--out benchmarks/results/rounds_vs_do_bench.json]

On a machine without CUDA it says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

from kernellab.evaluate.options import EvalOptions
from kernellab.evaluate.rounds import LocalRounds
from kernellab.evaluate.session import EvalSession
from kernellab.evaluate.stages.performance import WARMUP_MS, slot_count
from kernellab.evaluate.timing_slots import TimingSlots
from kernellab.sandbox.timing_stats import TimingPlan
from kernellab.tasks.load import load_task

# (task, config label, dtype): memory-bound rows of 50-150 µs and the power-capped matmul.
ROWS = [("normalization/rmsnorm", "num_tokens=8192,hidden=8192", "bfloat16"),
        ("fusion/softcap_softmax", "M=512,V=256000", "float32"),
        ("conv_pool/global_avg_pool", "N=256,C=2048,H=7,W=7", "float32"),
        ("matmul/matmul_nt", "M=4096,N=4096,K=4096", "bfloat16"),
        ("matmul/matmul_nt", "M=8192,N=4096,K=4096", "float16")]


def _row(task_id: str, label: str, dtype: str, rounds: int) -> dict:
    import triton.testing

    task = load_task(task_id)
    config = next(c for c in task.configs if c.label == label)
    options = EvalOptions()
    plan = TimingPlan(warmup_ms=WARMUP_MS, min_samples=options.timing_min_samples,
                      max_samples=options.timing_max_samples, target_ci_pct=options.timing_target_ci_pct,
                      budget_s=options.timing_budget_s)
    with EvalSession(task, EvalOptions(compile_baseline=False)) as session:
        case = session.case(config, dtype, 0)
        slots = TimingSlots(case, slot_count(case), backward=False)
        model = case.eager_model

        def call(i: int):
            with torch.no_grad():
                return model(*slots.slots[i].inputs)

        def once():
            with torch.no_grad():
                model(*case.inputs)

        ours, theirs, ratios = [], [], []
        for r in range(rounds):
            order = ("ours", "theirs") if r % 2 == 0 else ("theirs", "ours")
            got = {}
            for which in order:
                if which == "ours":
                    got[which] = LocalRounds(call, slots, plan).run("events")[1].median
                else:
                    got[which] = float(triton.testing.do_bench(once, return_mode="median"))  * 1e3
            ours.append(got["ours"])
            theirs.append(got["theirs"])
            ratios.append(got["ours"] / got["theirs"])
    return {"task": task_id, "config": label, "dtype": dtype, "ours_us": ours, "do_bench_us": theirs,
            "ratios": ratios, "ratio": statistics.median(ratios)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/rounds_vs_do_bench.json"))
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("rounds_vs_do_bench: no CUDA device here; this benchmark needs a GPU. Nothing measured.")
        return 0
    rows = []
    print(f"{'task':28s} {'config':30s} {'dtype':9s} {'rounds µs':>10s} {'do_bench µs':>11s} {'ratio':>6s}  range")
    for task_id, label, dtype in ROWS:
        row = _row(task_id, label, dtype, args.rounds)
        rows.append(row)
        print(f"{task_id:28s} {label:30s} {dtype:9s} {statistics.median(row['ours_us']):10.2f} "
              f"{statistics.median(row['do_bench_us']):11.2f} {row['ratio']:6.3f}  "
              f"{min(row['ratios']):.3f}-{max(row['ratios']):.3f}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
