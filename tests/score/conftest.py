"""Real verdicts (the evaluate layer's own dataclasses) for the store tests."""

from __future__ import annotations

import pytest

from kernellab.evaluate.verdict import (
    HoldoutResult,
    Mode,
    Stage,
    Status,
    Timing,
    Verdict,
)


def timing(config: str, eager_speedup: float, *, phase: str = "forward", baseline_us: float | None = None,
           peak: int | None = 4096) -> Timing:
    candidate = 10.0
    return Timing(config=config, dtype="float32", phase=phase, method="events", samples=100,
                  candidate_us=candidate, ci95_us=(9.9, 10.1), eager_us=candidate * eager_speedup,
                  compile_us=candidate * eager_speedup / 2, baseline_us=baseline_us,
                  speedup_vs_eager=eager_speedup, speedup_vs_compile=eager_speedup / 2,
                  speedup_vs_baseline=None if baseline_us is None else baseline_us / candidate,
                  pct_of_roofline=40.0, peak_mem_bytes=peak)


def make_verdict(*, correct: bool = True, compiled: bool = True, speedup: float | None = 2.0,
                 holdout: bool | None = True, holdout_speedup: float | None = 1.5,
                 status: Status | None = None) -> Verdict:
    v = Verdict(task={"id": "norm/rmsnorm", "sha256": "t" * 64}, candidate={"path": "kernel.py", "sha256": "c" * 64},
                device="NVIDIA H100", mode=Mode.GPU, versions={"torch": "2.11"}, policy="strict", seed=0)
    v.compiled = compiled
    v.correct = correct
    v.status = status or (Status.PASSED if correct else Status.FAILED)
    if not correct:
        v.failed_stage = Stage.SHAPE_SWEEP if compiled else Stage.LOAD
        v.error = "wrong output"
    if correct and speedup is not None:
        v.timings = [timing("M=4096", speedup), timing("M=8192", speedup),
                     timing("M=4096", speedup / 2, phase="forward+backward")]
        v.speedup = {"vs_eager": speedup, "vs_compile": speedup / 2, "vs_baseline": None}
    if correct:
        v.holdout = HoldoutResult(correct=holdout, failed_configs=[] if holdout else ["M=37 float32"])
        if holdout and holdout_speedup is not None:
            v.holdout.timings = [timing("M=37", holdout_speedup)]
            v.holdout.speedup = {"vs_eager": holdout_speedup, "vs_compile": None, "vs_baseline": None}
    v.elapsed_s = 3.25
    return v


@pytest.fixture
def verdict():
    return make_verdict
