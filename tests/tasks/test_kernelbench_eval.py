"""`kernellab eval` of bare KernelBench files on a machine without a GPU, as a user runs it (a real
process, its exit status and output): the reference as its own candidate gets a verdict through the
derived small config, and a problem too large for the machine is one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).parents[2]

# KernelBench's level-1 sizes: 4096 x 393216 inputs, far beyond what the CPU is given.
RELU = """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(x)

    batch_size = 4096
    dim = 393216

    def get_inputs():
        return [torch.rand(batch_size, dim) * 2 - 1]

    def get_init_inputs():
        return []
"""

# No size constant to scale: 2,048 input elements, and a 1024 x 1024 output.
OUTER = """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def forward(self, a, b):
            return torch.outer(a, b)

    def get_inputs():
        return [torch.randn(1024), torch.randn(1024)]

    def get_init_inputs():
        return []
"""


def write(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def run_eval(task: Path, *args: str) -> subprocess.CompletedProcess:
    candidate = task  # the reference file itself: a copy would be judged by ModelNew, which it lacks
    return subprocess.run([sys.executable, "-m", "kernellab.cli.main", "eval", "--task", str(task), "--candidate",
                           str(candidate), "--policy", "off", "--device", "cpu", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)


def test_reference_as_candidate_passes_through_the_derived_small_config(tmp_path):
    # Without a small config, the determinism stage indexed a config that did not exist: every
    # KernelBench problem ended in harness_error on the CPU.
    proc = run_eval(write(tmp_path, "19_ReLU.py", RELU), "--json", "--cpu-max-elements", "32768")
    verdict = json.loads(proc.stdout)
    assert proc.returncode == 0, (verdict["error"], proc.stderr[-800:])
    assert verdict["status"] == "passed"
    stages = {s["name"]: s for s in verdict["stages"]}
    checked = {c["config"] for s in verdict["stages"] for c in s["configs"]}
    assert checked and all("dim=393216" not in c for c in checked)  # only the derived config ran
    assert stages["determinism"]["passed"] and stages["determinism"]["configs"]
    assert "too large for the interpreter: batch_size=4096,dim=393216" in stages["shape_sweep"]["skipped"]


def test_too_large_for_this_machine_is_one_line_and_exit_2(tmp_path):
    # The inputs alone (2,048 elements) are within the limit; the output is not.
    proc = run_eval(write(tmp_path, "outer.py", OUTER), "--cpu-max-elements", "4096")
    assert proc.returncode == 2, proc.stderr[-800:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "too large for this machine" in lines[0]
    assert "2,048 elements of inputs and weights and 1,048,576 of outputs" in lines[0]
    assert "--cpu-max-elements 4,096" in lines[0]
    assert proc.stdout == "" and "Traceback" not in proc.stderr


def test_cpu_max_elements_lets_a_larger_config_run(tmp_path):
    proc = run_eval(write(tmp_path, "outer.py", OUTER), "--json", "--cpu-max-elements", "2000000")
    verdict = json.loads(proc.stdout)
    assert proc.returncode == 0, (verdict["error"], proc.stderr[-800:])
    assert {c["config"].split(" [")[0] for s in verdict["stages"] for c in s["configs"]} == {"default"}
