"""Static rules that keep the candidate's kernels its own: what a @triton.jit body may call, other
kernel compilers, and function code objects (which would forge where an interpreted launch's code
came from)."""

from __future__ import annotations

import textwrap

import pytest

from kernellab.evaluate.static_scan import scan_candidate
from kernellab.tasks.model import Policy

PRELUDE = '''
import math
import numpy as np
import torch
import torch.nn as nn
import triton
import triton.language as tl

_HOST = {}
'''

MODEL = '''

class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _k[(1,)](x, y, x.numel(), BLOCK=128)
        return y
'''


def scan(body: str, policy: Policy = Policy.STRICT):
    source = PRELUDE + textwrap.dedent(body) + MODEL
    return scan_candidate(source, "cand.py", policy)


def rules(result) -> set[str]:
    return {v.detail.rsplit("[", 1)[1].rstrip("]") for v in result.violations}


def test_a_jit_body_of_triton_language_builtins_and_helpers_is_clean():
    result = scan('''
        @triton.jit
        def _helper(x):
            return x * 2

        @triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4)], key=["n"])
        @triton.jit
        def _k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            tl.static_assert(BLOCK >= 16)
            LOG: tl.constexpr = math.log2(BLOCK)
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            for i in range(0, min(n, BLOCK), BLOCK):
                pass
            tl.store(y_ptr + offs, _helper(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < triton.cdiv(n, 1) * 1)
    ''')
    assert result.violations == [], [v.detail for v in result.violations]


@pytest.mark.parametrize("call", ["torch.add(_HOST['a'], _HOST['b'])", "np.add(1, 2)", "torch.cuda.synchronize()"])
@pytest.mark.parametrize("policy", [Policy.STRICT, Policy.KERNELBENCH])
def test_host_library_calls_in_a_jit_body_are_findings(call, policy):
    result = scan(f'''
        @triton.jit
        def _k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            r = {call}
    ''', policy)
    assert "device_code_only" in rules(result)
    assert scan(f'''
        @triton.jit
        def _k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            r = {call}
    ''', Policy.OFF).violations == []


@pytest.mark.parametrize("spelling", ["import cupy", "from numba import cuda as nc",
                                      "f = torch.cuda.jiterator._create_jit_fn('template <typename T> T f(T x) { return x; }')"])
def test_other_kernel_compilers_are_findings(spelling):
    result = scan(f'''
        {spelling}

        @triton.jit
        def _k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            pass
    ''')
    assert "own_kernels_only" in rules(result)


def test_function_code_objects_are_findings():
    result = scan('''
        def _renamed():
            pass

        _renamed.__code__ = _renamed.__code__.replace(co_filename="/site-packages/triton/runtime/interpreter.py")

        @triton.jit
        def _k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            pass
    ''')
    assert "no_dynamic_code" in rules(result)
