"""Recorded kernels for campaign tests: the ReLU kernel of tests/agents/test_solve.py, recorded for
three elementwise suite tasks. It is correct for ``elementwise/relu`` only, so a campaign has passing
and failing jobs; under the Triton interpreter each job takes seconds."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "tests" / "agents"))

from test_solve import GOOD, WRONG

from campaign_cli import TASKS


@pytest.fixture(scope="session")
def recorded(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("recorded")
    for task in TASKS:
        folder = root / task.replace("/", "__")
        folder.mkdir()
        (folder / "iter_1.py").write_text(GOOD)
    return root


@pytest.fixture(scope="session")
def recorded_two(tmp_path_factory) -> Path:
    """Two iterations for relu (a wrong kernel, then the right one) for search strategies."""
    root = tmp_path_factory.mktemp("recorded2")
    folder = root / "elementwise__relu"
    folder.mkdir()
    (folder / "iter_1.py").write_text(WRONG)
    (folder / "iter_2.py").write_text(GOOD)
    return root
