"""What the campaign tests share besides fixtures: the recorded tasks and running the real CLI.

A module of its own, not conftest.py: ``from conftest import ...`` finds whichever test folder's
conftest was imported first under that name (tests/score's, when both folders are collected in one
run), not this folder's."""

from __future__ import annotations

import os
import subprocess
import sys

TASKS = ("elementwise/relu", "elementwise/squared_relu", "elementwise/leaky_relu")


def kernellab(*args: str, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run([sys.executable, "-m", "kernellab.cli.main", *args], capture_output=True, text=True,
                          env=env, timeout=kwargs.pop("timeout", 600), check=False, **kwargs)


def start_kernellab(*args: str) -> subprocess.Popen:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.Popen([sys.executable, "-m", "kernellab.cli.main", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
