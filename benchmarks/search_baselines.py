"""The LLM-free ``search`` agent against the suite's Triton baselines: ``kernellab solve --agent search
--strategy keep-revert`` (or ``--strategy evolve``) per task, through :func:`kernellab.agents.solve.solve`.

    python benchmarks/search_baselines.py [--tasks a/b,c/d] [--strategy keep-revert] [--max-proposals 6]
                                          [--time-per-task 40] [--total-time 450] [--keep DIR]
    python benchmarks/search_baselines.py --small --max-proposals 2     # CPU: Triton interpreter, plumbing only

Per task, one solve starting from the task's baseline kernel (the workspace's ``kernel.py``): the
strategy's search session (public task: small, seen and edge configs, short timings) judges each
proposal of the ``search`` agent (templates first where one matches, then launch-parameter rewrites
of the kernel in hand); keep-revert keeps a proposal only when correct and at least 1% faster than the
kept kernel beyond the timing noise. The solve ends with its final verdict of the kept kernel on the
pristine task (every stage, holdout correctness included). Speedups are that verdict's own: the task's
baseline kernel timed by the judge beside the kept kernel. Every solve leaves its trajectory
(``trajectory.jsonl``), store and ``result.json`` in its folder (``--keep DIR``, else a temporary one).
Prints a table and the geometric mean, writes JSON.

``--small`` runs on the CPU under the Triton interpreter with correctness stages only: no timings, so
"kept" means the first correct proposal (the plumbing of the loop, not a speedup).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import shutil
import tempfile
import time
from pathlib import Path

from kernellab.agents.solve import SolveOptions, solve
from kernellab.evaluate.options import EvalOptions
from kernellab.evaluate.verdict import Verdict
from kernellab.tasks.load import load_task

# Triton baselines that are correct but leave speed on the table: 32x32 GEMM tiles, unfused
# epilogues, three-pass softmax, small blocks without warps tuning.
DEFAULT_TASKS = [
    "matmul/matmul_nt", "matmul/matmul_tn", "matmul/matmul_square_tf32", "matmul/gram_matrix",
    "matmul/matmul_decode_skinny", "matmul_epilogue/linear_bias_silu", "matmul_epilogue/linear_residual",
    "fusion/softcap_softmax", "conv_pool/conv2d_1x1_pointwise", "attention/attention_additive_mask",
    "optimizer/lion", "quantization/quant_int8_per_token",
]
FINAL_ESTIMATE_S = 20.0  # of --time-per-task, kept for the final verdict: the search stops before

log = logging.getLogger("search_baselines")


def eval_options(args: argparse.Namespace) -> EvalOptions:
    if args.small:
        # Holdout configs are left out on the CPU: the interpreter runs one program at a time, and a
        # 65536-row holdout with a tuned 4096-wide block takes minutes there to show nothing new.
        return EvalOptions(compile_baseline=False, request_timeout_s=300, device="cpu", configs="seen")
    return EvalOptions(compile_baseline=args.with_compile, time_holdout=args.time_holdout)


def forward_geomean(verdict: Verdict, field: str) -> float | None:
    values = [getattr(t, field) for t in verdict.timings if t.phase == "forward" and getattr(t, field)]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def run_task(task_id: str, args: argparse.Namespace, folder: Path) -> dict:
    started = time.monotonic()
    task = load_task(task_id)
    if not task.baseline_source:
        return {"task": task_id, "error": "the task has no baseline kernel"}
    search_s = max(5.0, args.time_per_task - (0 if args.small else FINAL_ESTIMATE_S))
    out_dir = folder / task_id.replace("/", "__")
    result = solve(task, SolveOptions("search", out_dir, {"screen": False, "seed": args.seed}, args.strategy,
                                      strategy_options(args), f"{search_s:.0f}s,{args.max_proposals}it",
                                      eval_options=eval_options(args), seed=args.seed))
    attempts = [line for line in map(json.loads, result.trajectory_path.read_text().splitlines())
                if line.get("kind") == "iteration"]
    final = result.final_verdict
    rows = [{"iteration": a.get("iteration"), "candidate": a.get("candidate"), "note": (a.get("proposal") or {}).get("note"),
             "decision": a.get("decision"), "reason": a.get("reason"), "eval_s": a.get("eval_s")} for a in attempts]
    kept = next((r["note"] for r in rows if r["candidate"] == result.best_candidate), None) or "the baseline"
    out: dict = {
        "task": task_id, "status": result.status, "stop": result.stop.to_dict() if result.stop else None,
        "iterations": result.iterations, "kept": kept, "kept_candidate": result.best_candidate,
        "summary": result.summary, "attempts": rows,
        "trajectory": str(result.trajectory_path), "seconds": round(time.monotonic() - started, 1),
    }
    if final is not None:
        out.update({
            "final": {"status": final.status.value, "correct": final.correct, "holdout_correct": final.holdout.correct,
                      "failed_stage": final.failed_stage.value if final.failed_stage else None, "error": final.error,
                      "speedup": final.speedup},
            "baseline_us": forward_geomean(final, "baseline_us"),
            "best_us": forward_geomean(final, "candidate_us"),
            "speedup_vs_baseline": final.speedup.get("vs_baseline"),
            "passed": result.status == "passed",
        })
    return out


def strategy_options(args: argparse.Namespace) -> dict:
    if args.strategy == "evolve":
        return {"population": args.population, "generations": 2, "offspring": 3}
    return {"patience": args.patience}


def table(results: list[dict]) -> str:
    def num(v, fmt="{:.1f}"):
        return fmt.format(v) if isinstance(v, (int, float)) else "-"

    lines = ["| task | baseline µs | best µs | speedup vs baseline | kept | all verdicts passed | s |",
             "|---|---:|---:|---:|---|---|---:|"]
    for r in results:
        lines.append(f"| {r['task']} | {num(r.get('baseline_us'))} | {num(r.get('best_us'))} | "
                     f"{num(r.get('speedup_vs_baseline'), '{:.2f}x')} | {(r.get('kept') or r.get('error', ''))[:70]} | "
                     f"{'yes' if r.get('passed') else 'no'} | {num(r.get('seconds'))} |")
    speedups = [r["speedup_vs_baseline"] for r in results if r.get("speedup_vs_baseline")]
    if speedups:
        lines.append(f"\ngeometric mean speedup vs the baselines: "
                     f"{math.exp(sum(math.log(s) for s in speedups) / len(speedups)):.2f}x over {len(speedups)} tasks")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(DEFAULT_TASKS), help="comma-separated suite ids")
    parser.add_argument("--strategy", default="keep-revert", choices=["keep-revert", "evolve"])
    parser.add_argument("--max-proposals", type=int, default=6, help="iterations of the solve's budget")
    parser.add_argument("--patience", type=int, default=3, help="keep-revert: reverts in a row before it stops")
    parser.add_argument("--population", type=int, default=4, help="evolve: the archive's population")
    parser.add_argument("--time-per-task", type=float, default=40.0,
                        help=f"seconds per task, final verdict included: no proposal starts after "
                             f"time-per-task - {FINAL_ESTIMATE_S:g} s")
    parser.add_argument("--total-time", type=float, default=450.0,
                        help="seconds for the whole run: each task gets at most its share of what is left "
                             "(12 tasks: about 8 minutes)")
    parser.add_argument("--small", action="store_true", help="CPU, Triton interpreter, correctness only")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--with-compile", action="store_true", help="also time torch.compile in the final verdicts")
    parser.add_argument("--time-holdout", action="store_true", help="also time holdout configs in the final verdicts")
    parser.add_argument("--keep", help="a folder for every solve's own folder (trajectory, store, kernels)")
    parser.add_argument("--out", default="benchmarks/results/search_baselines.json")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="kernellab-search-"))
    if args.keep and folder.exists():
        shutil.rmtree(folder)
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    per_task = args.time_per_task
    results: list[dict] = []
    started = time.monotonic()
    for i, task_id in enumerate(tasks):
        left = args.total_time - (time.monotonic() - started)
        args.time_per_task = min(per_task, left / (len(tasks) - i))  # a slow task does not starve the rest
        results.append(run_task(task_id, args, folder))
        print(table(results[-1:]).split("\n")[-1], flush=True)
        write(args, per_task, results, started)  # after every task: a run cut short keeps what it measured
    print()
    print(table(results))
    print(f"\n{len(results)} tasks in {time.monotonic() - started:.0f} s; solves (trajectories, kernels) under {folder}")


def write(args: argparse.Namespace, per_task: float, results: list[dict], started: float) -> None:
    options = dict(vars(args), time_per_task=per_task)
    document = {"mode": "interpret" if args.small else "gpu", "args": options, "results": results,
                "seconds": round(time.monotonic() - started, 1)}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(document, indent=2, default=str))


if __name__ == "__main__":
    main()
