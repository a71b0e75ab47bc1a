"""Under the interpreter, float32 → bfloat16 rounds to nearest even, as a GPU's conversion does."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import sys
    import torch, triton, triton.language as tl
    from kernellab.sandbox import interpreter_rounding

    @triton.jit
    def mul(x_ptr, y_ptr, o_ptr, n, B: tl.constexpr):
        offs = tl.arange(0, B)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m).to(tl.float32)
        y = tl.load(y_ptr + offs, mask=m).to(tl.float32)
        tl.store(o_ptr + offs, (x * y).to(o_ptr.dtype.element_ty), mask=m)

    def differing():
        torch.manual_seed(0)
        x, y = torch.randn(4096, dtype=torch.bfloat16), torch.randn(4096, dtype=torch.bfloat16)
        x[:4] = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0])
        out = torch.empty_like(x)
        mul[(1,)](x, y, out, 4096, B=4096)
        want = x * y  # torch's bfloat16 multiply: float32 product, rounded to nearest even
        same = (out == want) | (out.isnan() & want.isnan())
        return int((~same).sum())

    before = differing()
    assert interpreter_rounding.install()
    print(before, differing())
""")


def test_bfloat16_stores_round_to_nearest_even_like_the_gpu():
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    before, after = map(int, out.stdout.split())
    assert before > 1000  # the interpreter's own conversion truncates: about half the products differ
    assert after == 0
