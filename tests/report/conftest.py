"""Run directories for report tests: real results stores holding real verdicts (report_sample_run)."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_sample_run import DEVICE_FACTORS, build_sample_run

from kernellab.report import load_run
from kernellab.score import Store

H200 = "NVIDIA H200"


@pytest.fixture(scope="session")
def sample_dir(tmp_path_factory) -> Path:
    """Six tasks × two agents on an H100, timed, confined."""
    return build_sample_run(tmp_path_factory.mktemp("runs") / "h100-run")


@pytest.fixture(scope="session")
def sample(sample_dir):
    return load_run(sample_dir)


@pytest.fixture(scope="session")
def h200_dir(tmp_path_factory) -> Path:
    """The same agents and tasks on another device, each task's speedups scaled differently."""
    return build_sample_run(tmp_path_factory.mktemp("runs") / "h200-run", device=H200, scale_by_task=DEVICE_FACTORS)


@pytest.fixture(scope="session")
def untimed_dir(tmp_path_factory) -> Path:
    """An interpreter run: nothing timed, one job unscored (an interpreter gap)."""
    return build_sample_run(tmp_path_factory.mktemp("runs") / "cpu-run", timed=False,
                            unscored=(("codex", "activation/gelu"),))


@pytest.fixture(scope="session")
def unconfined_dir(tmp_path_factory) -> Path:
    return build_sample_run(tmp_path_factory.mktemp("runs") / "loose-run", confined=False, agents=("claude",))


@pytest.fixture
def empty_dir(tmp_path) -> Path:
    """A run that was created but has no finished job."""
    with Store.open(tmp_path / "empty-run") as store:
        store.create_run({}, device="NVIDIA H100 80GB HBM3", confined=True)
    return tmp_path / "empty-run"
