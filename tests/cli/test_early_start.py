"""The fork server a ``kernellab eval`` process starts before importing torch is the one its session uses."""

from __future__ import annotations

import pytest

from kernellab.cli.early_start import _gpu_expected, start_fork_server_early
from kernellab.sandbox import forkserver


@pytest.mark.parametrize(("argv", "env", "expected"), [
    (["kernellab", "eval", "--device", "cpu"], {}, False),
    (["kernellab", "eval", "--device=cuda"], {"CUDA_VISIBLE_DEVICES": ""}, True),
    (["kernellab", "eval"], {"CUDA_VISIBLE_DEVICES": "-1"}, False),
    (["kernellab", "eval"], {"CUDA_VISIBLE_DEVICES": ""}, False),
])
def test_the_device_is_guessed_from_the_flag_then_the_environment(monkeypatch, argv, env, expected):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert _gpu_expected(argv) is expected


def test_only_eval_starts_a_server_early():
    before = dict(forkserver._SHARED)
    start_fork_server_early(["kernellab", "tasks", "list"])
    start_fork_server_early(["kernellab", "eval", "--help"])
    assert forkserver._SHARED == before


def test_the_session_gets_the_server_started_early():
    from kernellab.evaluate.options import EvalOptions
    from kernellab.evaluate.session import EvalSession
    from kernellab.tasks.load import load_task

    forkserver.close_shared_servers()
    start_fork_server_early(["kernellab", "eval", "--device", "cpu"])
    (early,) = forkserver._SHARED.values()
    with EvalSession(load_task("normalization/rmsnorm"), EvalOptions(device="cpu")) as session:
        assert session.server() is early
    forkserver.close_shared_servers()
    assert not early.alive() and not forkserver._SHARED
