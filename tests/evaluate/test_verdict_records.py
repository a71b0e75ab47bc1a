"""The verdict's records round-trip through JSON, and their validators tie fields to status.

The JSON a user sees (``kernellab eval --json``) is ``Verdict.to_json()``; ``from_json`` must read it
back into equal records, and its keys are a contract (ARCHITECTURE.md, Contract 3): this file pins
them, so a renamed or dropped key fails here first.
"""

from __future__ import annotations

import json
import importlib.util
from pathlib import Path

import pytest

from kernellab.evaluate.verdict import (
    ConfigCheck,
    Stage,
    StageResult,
    Status,
    Verdict,
    VerdictSummary,
    Violation,
    ViolationKind,
)

# The score tests' real verdicts, from their folder's conftest (loaded under its own name: the
# module name ``conftest`` is the top-level tests/conftest.py's in a whole-suite run).
_spec = importlib.util.spec_from_file_location("score_conftest", Path(__file__).parents[1] / "score" / "conftest.py")
_score_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_score_conftest)
make_verdict = _score_conftest.make_verdict

VERDICT_KEYS = {"schema", "task", "candidate", "device", "mode", "versions", "policy", "seed", "status", "compiled",
                "correct", "failed_stage", "error", "stages", "violations", "timings", "compile_seconds", "speedup",
                "holdout", "elapsed_s", "notes"}
TIMING_KEYS = {"config", "dtype", "phase", "method", "samples", "candidate_us", "ci95_us", "eager_us", "compile_us",
               "baseline_us", "speedup_vs_eager", "speedup_vs_compile", "speedup_vs_baseline", "achieved_gbps",
               "achieved_tflops", "pct_of_roofline", "peak_mem_bytes", "eager_peak_mem_bytes", "traced_device_us"}


def full_verdict() -> Verdict:
    v = make_verdict(speedup=2.0)
    v.stages = [StageResult(Stage.STATIC, True, 0.01),
                StageResult(Stage.SHAPE_SWEEP, True, 1.5, [ConfigCheck("M=4096", "float32", 1e-6, 1e-5, 1e-4)]),
                StageResult(Stage.SANITIZE, True, skipped="no GPU")]
    v.violations = [Violation(ViolationKind.SIDE_STREAM, "work on a stream the timer does not see")]
    v.timings[0].eager_peak_mem_bytes = 8192
    v.timings[0].traced_device_us = 9.4
    v.notes = ["a note"]
    v.compile_seconds = 1.25
    return v


def test_a_verdict_round_trips_through_json():
    v = full_verdict()
    back = Verdict.from_json(v.to_json())
    assert back == v
    assert back.to_json() == v.to_json()
    assert isinstance(back.status, Status) and isinstance(back.stages[1].name, Stage)
    assert back.timings[0].ci95_us == (9.9, 10.1) and back.timings[0].eager_peak_mem_bytes == 8192


def test_the_json_keys_are_the_contract():
    d = json.loads(full_verdict().to_json())
    assert set(d) == VERDICT_KEYS
    assert all(set(t) == TIMING_KEYS for t in d["timings"] + d["holdout"]["timings"])
    assert set(d["stages"][0]) == {"name", "passed", "seconds", "configs", "error", "skipped"}
    assert set(d["holdout"]) == {"correct", "failed_configs", "speedup", "timings"}
    assert set(d["speedup"]) == {"vs_eager", "vs_compile", "vs_baseline"}


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(status="passed", failed_stage="smoke"), "passed verdict"),
    (lambda d: d.update(status="passed", correct=False), "passed verdict"),
    (lambda d: d.update(compiled=False), "correct without having compiled"),
    (lambda d: d.update(correct=False, compiled=False, status="failed", failed_stage="load"), "only when its kernel"),
    (lambda d: d.update(status="nearly"), "not a valid Status"),
    (lambda d: d["stages"][0].update(passed=False, skipped="why"), "skipped stage cannot have failed"),
    (lambda d: d["timings"][0].update(phase="backward"), "unknown phase"),
    (lambda d: d["violations"][0].update(kind="made_up"), "not a valid ViolationKind"),
])
def test_validators_tie_fields_to_status(change, message):
    d = json.loads(full_verdict().to_json())
    change(d)
    with pytest.raises(ValueError, match=message):
        Verdict.from_dict(d)


def test_an_older_document_takes_defaults_for_missing_keys():
    v = Verdict.from_dict({"status": "passed", "correct": True, "mode": "interpret"})
    assert v.compiled and v.correct and v.timings == [] and v.holdout.correct is None


def test_the_summary_round_trips_and_knows_unscored_statuses():
    v = full_verdict()
    s = VerdictSummary.of(v)
    assert VerdictSummary.from_dict(json.loads(json.dumps(s.to_dict()))) == s and s.scored
    assert not VerdictSummary.from_dict({"status": "needs_gpu"}).scored
