"""Fixtures shared across test folders."""

from __future__ import annotations

import os

import pytest

from kernellab.sandbox.forkserver import ForkServer


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A real fork server in interpreter mode, one per test module (a module may define its own)."""
    work = tmp_path_factory.mktemp("forkserver")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work), "TRITON_INTERPRET": "1"}
    srv = ForkServer(env, work / "forkserver.log")
    yield srv
    srv.close()
