"""``kernellab run`` and ``solve`` options checked before anything runs, and the words their
summaries use: a campaign without the options its agent needs is refused like ``solve`` refuses it,
an iteration budget a strategy cannot use is named, and crashed jobs are not called failed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from cli_process import kernellab

sys.path.insert(0, str(Path(__file__).parents[1] / "agents"))
from test_solve import WRONG  # noqa: E402 - a Triton ReLU that is wrong on negative inputs


def test_run_refuses_replay_without_kernels_before_anything_is_written(tmp_path):
    out = tmp_path / "run"
    proc = kernellab("run", "--tasks", "elementwise/relu", "--agent", "replay", "--out", str(out))
    assert proc.returncode == 2, proc.stdout
    assert proc.stderr.strip() == "error: replay needs kernels=<dir or file>: the recorded kernels to re-score"
    assert not out.exists()
    solve = kernellab("solve", "--task", "elementwise/relu", "--agent", "replay", "--out", str(tmp_path / "s"))
    assert solve.returncode == 2 and solve.stderr == proc.stderr  # the same mistake, the same answer


def test_run_refuses_an_unknown_agent_option(tmp_path):
    proc = kernellab("run", "--tasks", "elementwise/relu", "--agent", "replay", "--agent-option",
                     f"kernels={tmp_path}", "--agent-option", "colour=red", "--out", str(tmp_path / "run"))
    assert proc.returncode == 2 and "unknown option 'colour'" in proc.stderr
    assert not (tmp_path / "run").exists()


def test_solve_names_an_iteration_budget_single_cannot_use(tmp_path):
    kernel = tmp_path / "kernel.py"
    kernel.write_text(WRONG)
    proc = kernellab("solve", "--task", "elementwise/relu", "--agent", "replay", "--agent-option",
                     f"kernels={kernel}", "--budget", "3it", "--out", str(tmp_path / "s"))
    assert proc.returncode == 1, proc.stderr
    assert "note: --strategy single makes 1 proposal; the budget's 3 iterations are not used" in proc.stderr
    assert "keep-revert" in proc.stderr and "  1 proposal, " in proc.stdout  # and "1 proposal", not "1 proposals"


def test_run_summary_says_not_passing_for_a_failed_verdict(tmp_path):
    recorded = tmp_path / "recorded" / "elementwise__relu"
    recorded.mkdir(parents=True)
    (recorded / "iter_1.py").write_text(WRONG)
    proc = kernellab("run", "--tasks", "elementwise/relu", "--agent", "replay", "--agent-option",
                     f"kernels={recorded.parent}", "--out", str(tmp_path / "run"))
    assert proc.returncode == 0, proc.stderr
    summary = proc.stdout.strip().splitlines()[-1]
    assert summary.startswith("1/1 jobs finished, 0 passing, 1 not passing ·"), summary
    assert "failed" not in summary and "crashed" not in summary
    assert "[1/1] elementwise/relu|replay|0|single: failed" in proc.stderr  # the verdict's own status


@pytest.fixture(autouse=True)
def _interpret(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
