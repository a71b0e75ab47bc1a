"""Under the Triton interpreter, each load and store of a launch is counted to the file of the code
that issued it: a kernel of the candidate's whose body is a library's ``@triton.jit`` function (handed
in as a constexpr) moves its bytes under the library's file; Triton's own functions (``tl.sum``)
count to the kernel that called them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

LIBRARY = '''
import triton
import triton.language as tl


@triton.jit
def lib_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + i, tl.load(x_ptr + i, mask=i < n), mask=i < n)
'''

CANDIDATE = '''
import triton
import triton.language as tl


@triton.jit
def copy_rows(x_ptr, y_ptr, n, BLOCK: tl.constexpr, BODY: tl.constexpr):
    BODY(x_ptr, y_ptr, n, BLOCK)


@triton.jit
def total(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(y_ptr + i, tl.sum(tl.load(x_ptr + i, mask=i < n, other=0.0), axis=0) + i * 0.0, mask=i < 1)
'''

DRIVER = '''
import sys
sys.path.insert(0, sys.argv[1])
from kernellab.sandbox.evidence import end_call, record_interpreted_launches, start_call, take_calls
log = record_interpreted_launches()
import torch
import candidate_mod, library_mod
x = torch.arange(256, dtype=torch.float32)
y = torch.empty_like(x)
start_call(log)
candidate_mod.copy_rows[(2,)](x, y, 256, BLOCK=128, BODY=library_mod.lib_copy)
candidate_mod.total[(1,)](x, y, 256, BLOCK=256)
end_call(log)
assert torch.equal(y[1:], x[1:]) and float(y[0]) == float(x.sum())
for call in take_calls(log):
    for name, file, moved in call:
        print(name, file, moved)
'''


def test_bytes_are_counted_to_the_file_of_the_code_that_moved_them(tmp_path):
    (tmp_path / "library_mod.py").write_text(LIBRARY)
    (tmp_path / "candidate_mod.py").write_text(CANDIDATE)
    (tmp_path / "driver.py").write_text(DRIVER)
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    run = subprocess.run([sys.executable, str(tmp_path / "driver.py"), str(tmp_path)], capture_output=True, text=True,
                         env=env, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    rows = [line.split() for line in run.stdout.splitlines()]
    candidate, library = str(tmp_path / "candidate_mod.py"), str(tmp_path / "library_mod.py")
    assert rows == [["copy_rows", candidate, "0"],                # the launch itself moved nothing
                    ["copy_rows", library, str(2 * 256 * 4)],     # its body, the library's function
                    ["total", candidate, str(256 * 4 + 4)]]       # tl.sum is Triton's: the kernel's own
