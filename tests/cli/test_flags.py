"""Flags and output formats read the same in every command: flags show as flags, ``--device`` is
one option with one help text and one check, every listing command takes ``--json``."""

from __future__ import annotations

import json
import re

import pytest
from cli_process import kernellab

from kernellab.cli.options import Device

COMMANDS = [["eval"], ["run"], ["solve"], ["check"], ["doctor"], ["tasks", "list"], ["tasks", "show"],
            ["tasks", "validate"], ["agents", "list"], ["report"], ["leaderboard"], []]
WITH_DEVICE = [["eval"], ["run"], ["solve"], ["check"], ["tasks", "validate"]]
WITH_JSON = [["eval"], ["solve"], ["check"], ["doctor"], ["tasks", "list"], ["tasks", "show"], ["agents", "list"]]


def _help(command: list[str]) -> str:
    proc = kernellab(*command, "--help", env={"COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def helps() -> dict[str, str]:
    return {" ".join(c): _help(c) for c in COMMANDS}


def test_flags_show_as_flags(helps):
    for command, text in helps.items():
        assert "<bool>" not in text, command
        assert re.search(r"^\s+--help\s{2,}Show this message", text, re.M), command
    assert re.search(r"^\s+--sanitize / --no-sanitize\s{2,}compute-sanitizer", helps["eval"], re.M)
    assert re.search(r"^\s+--resume\s{2,}continue", helps["run"], re.M)


def test_json_is_a_flag_of_every_command_that_prints_results(helps):
    for command in WITH_JSON:
        assert re.search(r"^\s+--json\s{2,}print exactly one JSON document on stdout", helps[" ".join(command)],
                         re.M), command


def test_device_is_one_option_with_one_help_text(helps):
    words = " ".join(Device.__metadata__[0].help.split())
    for command in WITH_DEVICE:
        text = " ".join(helps[" ".join(command)].split())
        assert f"--device <cuda|cpu> {words}" in text, command


@pytest.mark.parametrize("command", [
    ["eval", "--task", "elementwise/relu", "--candidate", "examples/rmsnorm_triton.py"],
    ["run", "--tasks", "elementwise/relu", "--agent", "replay", "--out", "/nonexistent/x"],
    ["solve", "--task", "elementwise/relu", "--agent", "replay", "--out", "/nonexistent/x"],
    ["check"], ["tasks", "validate", "elementwise/relu"]])
def test_a_wrong_device_is_one_line_and_exit_2(command):
    proc = kernellab(*command, "--device", "gpu")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "'gpu' is not one of cuda, cpu" in proc.stderr


def test_doctor_json_is_one_document():
    proc = kernellab("doctor", "--json", env={"CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    checks = {c["check"]: c for c in doc["checks"]}
    assert {"torch", "triton", "kernellab", "cuda gpu", "sandbox"} <= set(checks)
    assert checks["cuda gpu"]["ok"] is False and doc["eval_mode"] == "interpret"
    assert checks["sandbox"]["ok"] is True, checks["sandbox"]
