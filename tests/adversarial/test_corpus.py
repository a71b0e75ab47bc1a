"""Every adversarial case through a real EvalSession: cheats rejected with the right kind, legitimate
unusual kernels accepted. One warm session per fixture task, as a benchmark campaign would use it.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest
import torch

from kernellab.evaluate.options import EvalOptions
from kernellab.evaluate.session import EvalSession
from kernellab.tasks.load import load_task

HERE = Path(__file__).parent
MANIFEST = tomllib.loads((HERE / "manifest.toml").read_text())
# The violations only the sanitize stage finds (compute-sanitizer: ~7 s a case on an H200).
SANITIZER_KINDS = {"memory_safety", "race"}


def needs_sanitize(case: dict) -> bool:
    """Whether a case runs with the sanitize stage: it expects (or accepts) what only compute-sanitizer
    sees, or says ``sanitize = true``. Every other case is about a stage the sanitizer does not change,
    and the stage's own false positives on sound kernels are tests/evaluate/test_sanitize.py's."""
    named = {case.get("violation", "")} | set(case.get("also_ok", []))
    return bool(case.get("sanitize")) or bool(named & SANITIZER_KINDS)


# Grouped by task: one warm session per task at a time (sessions keep their cases on the device).
CASES = sorted((c for c in MANIFEST["case"] if c.get("kind", "candidate") == "candidate"),
               key=lambda c: (c["task"], needs_sanitize(c)))
GPU = torch.cuda.is_available()
# "i/n": this process takes every n-th case from the i-th, beside the other shards on one GPU (cases
# are few per task and uneven: a task's cases spread over the shards, each opening its own session).
# A file naming the candidates to run, one per line (the rest of a run a device call's limit cut short).
ONLY = os.environ.get("KERNELLAB_CORPUS_ONLY")
if ONLY:
    _named = set(Path(ONLY).read_text().split())
    CASES = [c for c in CASES if c["candidate"] in _named]
SHARD = os.environ.get("KERNELLAB_CORPUS_SHARD")
if SHARD:
    _index, _count = (int(part) for part in SHARD.split("/"))
    CASES = CASES[_index::_count]


@pytest.fixture(scope="module")
def gpu_lock():
    """Shards share the GPU as a campaign's workers do: checks overlap, every timing has it alone."""
    if not (SHARD and GPU):
        yield None
        return
    from kernellab.evaluate.gpu_sharing import set_guards
    from kernellab.run.scheduler import GpuLock, physical_gpu

    lock = GpuLock(physical_gpu(torch.cuda.current_device()))
    set_guards(lock.exclusive, lock.alone)
    yield lock
    set_guards(None)


@pytest.fixture(scope="module")
def sessions():
    opened: dict[tuple[str, bool], EvalSession] = {}

    def get(task: str, sanitize: bool) -> EvalSession:
        if (task, sanitize) not in opened:
            for other in opened.values():  # the previous task's cases are done: free its device memory
                other.close()
            opened.clear()
            # Short timing budgets: the corpus is about verdicts, and the timing stage must still run
            # (phase detection and timer checks live there).
            options = EvalOptions(request_timeout_s=60, timing_budget_s=0.2, time_holdout=False, compile_baseline=False,
                                  sanitize=sanitize)
            opened[task, sanitize] = EvalSession(load_task(HERE / "tasks" / task), options)
        return opened[task, sanitize]

    yield get
    for session in opened.values():
        session.close()


def _marks(case: dict) -> list:
    marks = []
    if case.get("gpu_only"):
        marks.append(pytest.mark.gpu)
    if case.get("open"):  # a hole known and not yet closed: it must fail until it is, then say so
        marks.append(pytest.mark.xfail(strict=True, reason=f"open: {case['open']}"))
    if case.get("open_gpu") and GPU:  # honest on the CPU (its claim is the GPU's), open on the GPU
        # at_margin: a gain at a bound's edge, caught on some runs (noise decides), so not strict
        marks.append(pytest.mark.xfail(strict=not case.get("at_margin"), reason=f"open on the GPU: {case['open_gpu']}"))
    if case.get("open_cpu") and not GPU:  # closed by GPU evidence, still open on the CPU's
        marks.append(pytest.mark.xfail(strict=True, reason=f"open on the CPU: {case['open_cpu']}"))
    return marks


@pytest.mark.parametrize("case", [pytest.param(c, id=c["candidate"], marks=_marks(c)) for c in CASES])
def test_case(case, sessions, gpu_lock):
    on_cpu_instead = not GPU and "cpu_status" in case
    if case.get("gpu_only") and not GPU and not on_cpu_instead:
        pytest.skip("needs a GPU to show")
    session = sessions(case["task"], needs_sanitize(case))
    if gpu_lock is not None:
        gpu_lock.begin("shared")
    try:
        verdict = session.evaluate(HERE / "candidates" / case["candidate"])
    finally:
        if gpu_lock is not None:
            gpu_lock.end()
    kinds = verdict.violation_kinds()
    summary = f"status={verdict.status.value} correct={verdict.correct} stage={verdict.failed_stage} " \
              f"violations={sorted(kinds)} error={verdict.error}"
    print(f"\n{case['candidate']}: {summary}", flush=True)  # shows under -s as each case ends
    if on_cpu_instead:
        assert verdict.status.value in case["cpu_status"], summary
        if verdict.status.value != "passed" or case.get("gpu_only"):
            return  # what the CPU can show; the case's claim needs a GPU
    if case.get("holdout_only"):
        assert verdict.status.value == "passed" and verdict.correct, summary
        assert verdict.holdout.correct is False and verdict.exit_code == 3, summary
        return
    if case["expect"] == "accept":
        assert verdict.status.value == "passed" and verdict.correct and not kinds, summary
        return
    if "neutralised_below" in case and verdict.status.value == "passed" and verdict.correct and not kinds:
        # the cheat gains nothing any more: accepted only where it is timed at an honest kernel's speed
        fastest = max((t.speedup_vs_eager or 0.0 for t in verdict.timings), default=None)
        assert fastest is not None and fastest < case["neutralised_below"], f"{summary} fastest={fastest}"
        return
    assert not (verdict.status.value == "passed" and verdict.correct), summary
    if "status" in case:
        assert verdict.status.value == case["status"], summary
    wanted = case.get("violation", "")
    also = set(case.get("also_ok", []))
    if wanted:
        plain_failure_ok = "failed" in also and not kinds
        assert wanted in kinds or kinds & also or plain_failure_ok, summary
    if case.get("stage") and (not wanted or wanted in kinds):
        assert verdict.failed_stage is not None and verdict.failed_stage.value == case["stage"], summary
