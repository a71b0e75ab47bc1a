"""The LLM-free ``search`` agent against the suite's Triton baselines, keep/revert style.

    python benchmarks/search_baselines.py [--tasks a/b,c/d] [--max-proposals 6] [--time-per-task 40] [--total-time 450]
    python benchmarks/search_baselines.py --small --max-proposals 2     # CPU: Triton interpreter, plumbing only

Per task: the baseline kernel's verdict under the search options (correctness on small, seen and edge
configs, short timings), then up to ``--max-proposals`` proposals of the ``search`` agent (templates
first where one matches, then launch-parameter rewrites of the kernel in hand), each kept only when
correct and at least 1% faster than the kept kernel beyond the timing noise (geometric mean of
median ratios >= 1.01 and of pessimistic CI ratios > 1), and finally a full verdict of the kept
kernel (every stage, holdout correctness included). Speedups are the final verdict's own: the task's
baseline kernel timed by the judge beside the kept kernel. Prints a table and the geometric mean,
writes JSON.

``--small`` runs on the CPU under the Triton interpreter with correctness stages only (holdout configs
left out): no timings, so "kept" means the first correct proposal (the plumbing of the loop, not a
speedup).
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import math
import tempfile
import time
from pathlib import Path

import torch

from kernellab.agents.adapters.search import SearchAgent
from kernellab.agents.base import ProposalRequest
from kernellab.agents.search.screen import (
    SCREEN_OPTIONS,
    Screened,
    faster,
    screening_options,
    summarize,
)
from kernellab.agents.workspace import build_workspace
from kernellab.evaluate.options import EvalOptions, with_stages
from kernellab.evaluate.session import EvalSession
from kernellab.evaluate.verdict import Stage, Status, Verdict
from kernellab.tasks.load import load_task
from kernellab.tasks.model import Task

# Triton baselines that are correct but leave speed on the table: 32x32 GEMM tiles, unfused
# epilogues, three-pass softmax, small blocks without warps tuning.
DEFAULT_TASKS = [
    "matmul/matmul_nt", "matmul/matmul_tn", "matmul/matmul_square_tf32", "matmul/gram_matrix",
    "matmul/matmul_decode_skinny", "matmul_epilogue/linear_bias_silu", "matmul_epilogue/linear_residual",
    "fusion/softcap_softmax", "conv_pool/conv2d_1x1_pointwise", "attention/attention_additive_mask",
    "optimizer/lion", "quantization/quant_int8_per_token",
]
FINAL_ESTIMATE_S = 20.0  # of --time-per-task, kept for the full verdict: the search loop stops before
CORRECTNESS = (Stage.SMOKE, Stage.SHAPE_SWEEP, Stage.EDGE, Stage.BACKWARD)

log = logging.getLogger("search_baselines")


def search_options(task: Task, small: bool) -> EvalOptions:
    if small:
        return with_stages(EvalOptions(configs="seen", trials=1, compile_baseline=False, request_timeout_s=300,
                                       device="cpu"), *CORRECTNESS)
    return screening_options(task, SCREEN_OPTIONS)


def final_options(small: bool, with_compile: bool, time_holdout: bool) -> EvalOptions:
    if small:
        # Holdout configs are left out on the CPU: the interpreter runs one program at a time, and a
        # 65536-row holdout with a tuned 4096-wide block takes minutes there to show nothing new.
        return with_stages(EvalOptions(configs="seen", compile_baseline=False, request_timeout_s=300, device="cpu"),
                           *CORRECTNESS, Stage.STABILITY, Stage.DETERMINISM)
    return EvalOptions(compile_baseline=with_compile, time_holdout=time_holdout)


def evaluate(session: EvalSession, source: str, folder: Path, name: str) -> tuple[Verdict, Screened]:
    path = folder / f"{name}.py"
    path.write_text(source)
    verdict = session.evaluate(path)
    time_us, rows = summarize(verdict)
    return verdict, Screened(verdict.correct, time_us, rows, verdict.error, verdict.elapsed_s)


def forward_geomean(verdict: Verdict, field: str) -> float | None:
    values = [getattr(t, field) for t in verdict.timings if t.phase == "forward" and getattr(t, field)]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def run_task(task_id: str, args: argparse.Namespace, folder: Path) -> dict:
    started = time.monotonic()
    task = load_task(task_id)
    if not task.baseline_source:
        return {"task": task_id, "error": "the task has no baseline kernel"}
    out: dict = {"task": task_id, "attempts": []}
    workspace = build_workspace(task, folder / task_id.replace("/", "__")).path
    kept, kept_note = search(task, args, workspace, out, started)
    release_device_memory()  # the search session's reference cases, before the final session builds its own
    (workspace / "kept.py").write_text(kept)
    with EvalSession(task, final_options(args.small, args.with_compile, args.time_holdout)) as session:
        final, _ = evaluate(session, kept, workspace, "final")
    out.update({
        "kept": kept_note,
        "final": {"status": final.status.value, "correct": final.correct, "holdout_correct": final.holdout.correct,
                  "failed_stage": final.failed_stage.value if final.failed_stage else None, "error": final.error,
                  "speedup": final.speedup, "timings": [t.to_dict() for t in final.timings]},
        "baseline_us": forward_geomean(final, "baseline_us"),
        "best_us": forward_geomean(final, "candidate_us"),
        "speedup_vs_baseline": final.speedup.get("vs_baseline"),
        "passed": final.status is Status.PASSED and final.holdout.correct is not False,
        "seconds": round(time.monotonic() - started, 1),
    })
    return out


def search(task: Task, args: argparse.Namespace, workspace: Path, out: dict, started: float) -> tuple[str, str]:
    """The keep/revert loop; returns the kept source and what it is."""
    agent = SearchAgent(screen=False, seed=args.seed)
    with EvalSession(task, search_options(task, args.small)) as session:
        verdict, kept_result = evaluate(session, task.baseline_source, workspace, "baseline")
        out["baseline_search_verdict"] = {"status": verdict.status.value, "correct": verdict.correct,
                                          "time_us": kept_result.time_us, "error": verdict.error}
        if not verdict.correct:
            log.warning("%s: the baseline itself fails the search checks: %s", task.id, verdict.error)
        kept, kept_note = task.baseline_source, "baseline"
        for i in range(args.max_proposals):
            if time.monotonic() - started > args.time_per_task - (0 if args.small else FINAL_ESTIMATE_S):
                out["stopped"] = "time per task reached"
                break
            (workspace / "kernel.py").write_text(kept)
            proposal = agent.propose(ProposalRequest(workspace=workspace, task_id=task.id, iteration=i, parent=kept,
                                                     seed=args.seed))
            if proposal.source is None:
                out["stopped"] = proposal.note
                break
            verdict, result = evaluate(session, proposal.source, workspace, f"proposal_{i:02d}")
            if args.small:  # no timings: the first correct proposal is kept, to run the rest of the loop
                better = result.correct and kept == task.baseline_source
            else:  # an incorrect kept kernel (a failing baseline) gives way to any correct one
                better = result.correct and (not kept_result.correct or faster(result, kept_result))
            out["attempts"].append({"iteration": i, "note": proposal.note, "correct": result.correct,
                                    "time_us": result.time_us, "kept": better, "error": verdict.error,
                                    "seconds": round(verdict.elapsed_s, 2)})
            log.info("%s #%d %s: %s%s", task.id, i, proposal.note[:90], "correct" if result.correct else
                     f"failed ({(verdict.error or '')[:80]})", f", {result.time_us:.1f} µs" if result.time_us else "")
            if better:
                kept, kept_result, kept_note = proposal.source, result, proposal.note
    agent.close()
    return kept, kept_note


def release_device_memory() -> None:
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


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
    parser.add_argument("--max-proposals", type=int, default=6)
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
    parser.add_argument("--out", default="benchmarks/results/search_baselines.json")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    folder = Path(tempfile.mkdtemp(prefix="kernellab-search-"))
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
    print(f"\n{len(results)} tasks in {time.monotonic() - started:.0f} s; kernels under {folder}")


def write(args: argparse.Namespace, per_task: float, results: list[dict], started: float) -> None:
    options = dict(vars(args), time_per_task=per_task)
    document = {"mode": "interpret" if args.small else "gpu", "args": options, "results": results,
                "seconds": round(time.monotonic() - started, 1)}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(document, indent=2, default=str))


if __name__ == "__main__":
    main()
