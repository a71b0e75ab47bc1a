"""A synthetic run directory made of real verdicts in a real results store: six tasks in five
categories (two kernel→kernel), two agents, three search iterations and a final re-evaluation per
job, with timings, holdout verdicts and costs. The numbers are invented; the records are exactly what
a campaign writes.

    python tests/report/report_sample_run.py OUT_DIR [--cpu] [--screenshot PNG]   # OUT_DIR/report.html
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

from kernellab.evaluate.verdict import (
    HoldoutResult,
    Mode,
    Stage,
    Status,
    Timing,
    Verdict,
)
from kernellab.score import AttemptUsage, JobSpec, Store, TaskKind

H100 = "NVIDIA H100 80GB HBM3"
VERSIONS = {"kernellab": "0.1.0", "torch": "2.11.0", "triton": "3.6.0"}


@dataclass(frozen=True)
class Outcome:
    """What one agent's final kernel for one task does. speedup None: wrong (or no) kernel."""

    speedup: float | None  # vs eager, seen configs
    baseline: float | None = None  # vs the baseline kernel (kernel→kernel tasks)
    holdout: bool | None = True
    status: Status | None = None  # a non-passing status for a kernel that never ran right


K2K = TaskKind.KERNEL_TO_KERNEL
TASKS = {  # task id: (category, kind)
    "normalization/rmsnorm": ("normalization", TaskKind.TORCH_TO_KERNEL),
    "normalization/layernorm": ("normalization", K2K),
    "activation/gelu": ("activation", TaskKind.TORCH_TO_KERNEL),
    "matmul/gemm_bias_relu": ("matmul", TaskKind.TORCH_TO_KERNEL),
    "reduction/softmax": ("reduction", K2K),
    "attention/sdpa_causal": ("attention", TaskKind.TORCH_TO_KERNEL),
}
OUTCOMES = {
    "claude": {
        "normalization/rmsnorm": Outcome(2.4),
        "normalization/layernorm": Outcome(3.1, baseline=1.25),
        "activation/gelu": Outcome(1.15),
        "matmul/gemm_bias_relu": Outcome(0.92),
        "reduction/softmax": Outcome(1.9, baseline=1.1, holdout=False),
        "attention/sdpa_causal": Outcome(1.4, holdout=None),
    },
    "codex": {
        "normalization/rmsnorm": Outcome(1.8),
        "normalization/layernorm": Outcome(2.6, baseline=1.05),
        "activation/gelu": Outcome(0.85),
        "matmul/gemm_bias_relu": Outcome(None),
        "reduction/softmax": Outcome(1.7, baseline=0.95),
        "attention/sdpa_causal": Outcome(None, status=Status.TIMEOUT),
    },
}
# How a second device changes each task's speedup (for cross-hardware comparisons).
DEVICE_FACTORS = {"normalization/rmsnorm": 1.3, "normalization/layernorm": 1.1, "activation/gelu": 1.25,
                  "matmul/gemm_bias_relu": 0.8, "reduction/softmax": 0.9, "attention/sdpa_causal": 1.6}


def timing(config: str, speedup: float, baseline: float | None) -> Timing:
    candidate = 20.0 + 3 * len(config)
    return Timing(config=config, dtype="bfloat16", phase="forward", method="events", samples=200,
                  candidate_us=candidate, ci95_us=(candidate * 0.99, candidate * 1.01),
                  eager_us=candidate * speedup, compile_us=candidate * speedup / 1.6,
                  baseline_us=None if baseline is None else candidate * baseline, speedup_vs_eager=speedup,
                  speedup_vs_compile=speedup / 1.6, speedup_vs_baseline=baseline,
                  achieved_gbps=1200.0 * speedup / 3, pct_of_roofline=min(95.0, 30.0 * speedup),
                  peak_mem_bytes=1 << 26)


def verdict(task_id: str, outcome: Outcome, *, device: str, mode: Mode, scale: float = 1.0,
            holdout_scale: float = 0.9) -> Verdict:
    v = Verdict(task={"id": task_id, "sha256": "0" * 64}, candidate={"path": "kernel.py", "sha256": "1" * 64},
                device=device, mode=mode, versions={"python": "3.11.9", **VERSIONS}, policy="strict", seed=0)
    if outcome.speedup is None:
        v.status = outcome.status or Status.FAILED
        v.compiled = outcome.status is None
        v.failed_stage = Stage.SHAPE_SWEEP if v.compiled else Stage.LOAD
        v.error = "output mismatch at M=4096 (max rel err 3.1e-1)" if v.compiled else "timed out"
        return v
    v.status, v.compiled, v.correct = Status.PASSED, True, True
    v.holdout = HoldoutResult(correct=outcome.holdout, failed_configs=[] if outcome.holdout is not False
                              else ["M=37 N=1019 bfloat16"])
    if mode is Mode.GPU:
        s = outcome.speedup * scale
        b = None if outcome.baseline is None else outcome.baseline * scale
        # two configs whose geometric mean is s, as the verdict reports it
        v.timings = [timing("M=4096", s * 0.9, b and b * 0.9), timing("M=8192", s / 0.9, b and b / 0.9)]
        v.speedup = {"vs_eager": math.sqrt(s * 0.9 * s / 0.9), "vs_compile": s / 1.6, "vs_baseline": b}
        if outcome.holdout:
            v.holdout.timings = [timing("M=37", s * holdout_scale, None)]
            v.holdout.speedup = {"vs_eager": s * holdout_scale, "vs_compile": None, "vs_baseline": None}
    v.elapsed_s = 4.5
    return v


def build_sample_run(run_dir: Path, *, device: str = H100, timed: bool = True, confined: bool = True,
                     agents: tuple[str, ...] = ("claude", "codex"), scale_by_task: dict[str, float] | None = None,
                     tasks: tuple[str, ...] = tuple(TASKS), outcomes: dict[str, dict[str, Outcome]] | None = None,
                     unscored: tuple[tuple[str, str], ...] = ()) -> Path:
    """Write a run directory; ``timed=False`` gives an interpreter run (no timings at all).
    ``outcomes`` replaces OUTCOMES (agent → task → Outcome); ``unscored`` lists (agent, task) jobs whose
    final verdict is ``unsupported_in_interpreter``."""
    mode = Mode.GPU if timed else Mode.INTERPRET
    outcomes = outcomes or OUTCOMES
    with Store.open(run_dir) as store:
        run = store.create_run({"agents": list(agents), "tasks": list(tasks)}, device=device if timed else "cpu",
                               versions=VERSIONS, confined=confined)
        specs = [JobSpec(t, a, category=TASKS[t][0], kind=TASKS[t][1]) for a in agents for t in tasks]
        for job in store.add_jobs(run.id, specs):
            outcome = outcomes[job.agent][job.task_id]
            scale = (scale_by_task or {}).get(job.task_id, 1.0)
            cost = 0.35 if job.agent == "claude" else 0.22
            usage = AttemptUsage(tokens_in=40_000 + 900 * len(job.task_id), tokens_out=6_000, cost_usd=cost,
                                 agent_steps=12, wall_s=95.0 + 7 * len(job.task_id))
            # iteration 1: does not compile; 2: a slower correct kernel; 3: the final one
            first = Outcome(None, status=Status.FAILED)
            second = Outcome(outcome.speedup * 0.6, outcome.baseline and outcome.baseline * 0.6,
                             outcome.holdout) if outcome.speedup else outcome
            for i, o in enumerate((first, second, outcome), start=1):
                v = verdict(job.task_id, o, device=device, mode=mode, scale=scale)
                if i == 1:
                    v.compiled, v.failed_stage, v.error = False, Stage.LOAD, "triton compile error"
                store.record_attempt(job, f"# kernel v{i} of {job.task_id}\n", v, iteration=i, usage=usage,
                                     kept=i == 3)
            final = verdict(job.task_id, outcome, device=device, mode=mode, scale=scale)
            if (job.agent, job.task_id) in unscored:
                final.status, final.correct, final.error = Status.UNSUPPORTED_IN_INTERPRETER, False, "bf16 constant"
            store.record_attempt(job, f"# kernel v3 of {job.task_id}\n", final, usage=AttemptUsage(wall_s=5.0),
                                 final=True)
            store.finish_job(job, "done")
    return run_dir


def main(argv: list[str]) -> None:
    import argparse

    from kernellab.report import load_run, render_run

    parser = argparse.ArgumentParser(description="Build the synthetic sample run and its HTML report.")
    parser.add_argument("out", type=Path, help="run directory to create (must not exist)")
    parser.add_argument("--screenshot", type=Path, help="also write a PNG of the whole page, 1400 px wide "
                                                        "(needs chromium)")
    parser.add_argument("--cpu", action="store_true", help="a run without a GPU: nothing timed, one job unscored")
    args = parser.parse_args(argv)
    if args.cpu:
        build_sample_run(args.out, timed=False, unscored=(("codex", "activation/gelu"),))
    else:
        build_sample_run(args.out)
    page = args.out / "report.html"
    page.write_text(render_run(load_run(args.out), "html"), encoding="utf-8")
    print(page)
    if args.screenshot:
        from report_browser import find_chromium, page_height, screenshot

        browser = find_chromium()
        if browser is None:
            raise SystemExit("chromium not found (apt-get install chromium)")
        screenshot(browser, page, args.screenshot, size=(1400, page_height(browser, page, 1400)))
        print(args.screenshot)


if __name__ == "__main__":
    main(sys.argv[1:])
