"""Roofline: safe formula evaluation, default byte and FLOP counts, the roofline arithmetic."""

from __future__ import annotations

import pytest
import torch

from kernellab.evaluate.ceilings import Ceilings
from kernellab.evaluate.roofline import (
    RooflinePoint,
    default_bytes,
    default_flops,
    evaluate_formula,
    roofline,
    task_bytes,
    task_flops,
)

CONSTANTS = {"M": 4096, "N": 2048, "K": 512, "eps": 1e-6, "name": "x", "shape": (3, 4), "flag": True}


@pytest.mark.parametrize("expr, expected", [
    ("2 * M * N * elem + N * elem", 2 * 4096 * 2048 * 2 + 2048 * 2),
    ("3 * M * N", 3 * 4096 * 2048),
    ("2 * M * N * K", 2 * 4096 * 2048 * 512),
    ("(M + N) * elem", (4096 + 2048) * 2),
    ("M // 3", 4096 // 3),
    ("M / 2", 2048.0),
    ("2 ** 10", 1024),
    ("-M + 2 * M", 4096),
    ("min(M, N) * max(1, K, 3)", 2048 * 512),
    ("1.5e3", 1500.0),
    ("+M", 4096),
])
def test_evaluate_formula_good(expr, expected):
    assert evaluate_formula(expr, CONSTANTS, elem_bytes=2) == pytest.approx(expected)
    assert isinstance(evaluate_formula(expr, CONSTANTS, elem_bytes=2), float)


@pytest.mark.parametrize("expr, message", [
    ("__import__('os')", "call"),
    ("__import__('os').system('true')", "call"),
    ("M.__class__", "Attribute"),
    ("(1).__class__.__bases__", "Attribute"),
    ("abs(M)", "call"),
    ("pow(M, 2)", "call"),
    ("shape[0]", "Subscript"),
    ("'a' * 3", "constant"),
    ("True + 1", "constant"),
    ("M if N else K", "IfExp"),
    ("M < N", "Compare"),
    ("lambda: 1", "Lambda"),
    ("[M, N]", "List"),
    ("M % 7", "Mod"),
    ("M << 2", "LShift"),
    ("~M", "Invert"),
    ("not M", "Not"),
    ("min(M)", "two or more"),
    ("max(*[M, N])", "two or more"),
    ("min(M, N, key=abs)", "two or more"),
    ("unknown * 2", "unknown name 'unknown'"),
    ("name * 2", "unknown name 'name'"),  # a string constant is not a number
    ("flag * 2", "unknown name 'flag'"),  # nor is a bool
    ("M / 0", "divides by zero"),
    ("10 ** 10 ** 10", "exponent"),
    ("((9 ** 64) ** 64) ** 64", "overflows"),
    ("N - M", "negative"),
    ("(-8) ** 0.5", "complex"),
    ("M +", "not a valid expression"),
    ("", "non-empty"),
    ("x = 1", "not a valid expression"),
])
def test_evaluate_formula_rejects(expr, message):
    with pytest.raises(ValueError, match=message) as info:
        evaluate_formula(expr, CONSTANTS, elem_bytes=4)
    assert expr in str(info.value) or not expr


def test_elem_shadows_no_constant_but_is_always_defined():
    assert evaluate_formula("elem", {}, elem_bytes=4) == 4.0
    assert evaluate_formula("elem", {"elem": 99}, elem_bytes=2) == 2.0


def test_default_bytes_counts_each_tensor_once():
    x = torch.empty(8, 16, dtype=torch.float16)  # 256 B
    w = torch.empty(16, dtype=torch.float32)  # 64 B
    out = torch.empty(8, 16, dtype=torch.float16)  # 256 B
    assert default_bytes([x, w, 3, None, 1e-5], out) == 256 + 64 + 256
    assert default_bytes((x,), (out, {"aux": w})) == 256 + 256 + 64
    assert default_bytes([x[:, :4]], []) == 8 * 4 * 2  # a view counts its own elements
    assert default_bytes([], None) == 0


def test_default_flops_of_a_matmul_is_2mnk():
    m, n, k = 32, 48, 64
    a, b = torch.randn(m, k), torch.randn(k, n)
    assert default_flops(torch.matmul, [a, b]) == 2 * m * n * k
    meta = [torch.empty(m, k, device="meta"), torch.empty(k, n, device="meta")]
    assert default_flops(torch.mm, meta) == 2 * m * n * k


def test_default_flops_is_zero_for_elementwise_work():
    x = torch.randn(100)
    assert default_flops(lambda t: (t * 2).relu(), [x]) == 0


def test_task_counts_prefer_the_formula():
    x, out = torch.empty(4, 4), torch.empty(4, 4)
    assert task_bytes("M * N * elem", {"M": 2, "N": 3}, 4, [x], out) == 24.0
    assert task_bytes(None, {}, 4, [x], out) == 128.0
    assert task_flops("2 * M", {"M": 5}, 4, torch.mm, []) == 10.0
    assert task_flops(None, {}, 4, torch.mm, [torch.randn(2, 3), torch.randn(3, 4)]) == 48.0


CEIL = Ceilings(device_name="NVIDIA H100 80GB HBM3", copy_gbps=3000.0, fp32_tflops=50.0, tf32_tflops=400.0,
                bf16_tflops=700.0, fp16_tflops=710.0, fp64_tflops=60.0, torch_version="2.11.0",
                triton_version="3.6.0")


def test_roofline_memory_bound():
    # 300 MB at 3000 GB/s is 100 µs; measured 125 µs → 80%
    p = roofline(300e6, 1e6, 125.0, CEIL, "float16")
    assert p.achieved_gbps == pytest.approx(2400.0)
    assert p.achieved_tflops == pytest.approx(1e6 / 125e-6 / 1e12)
    assert p.roofline_us == pytest.approx(100.0)
    assert p.pct_of_roofline == pytest.approx(80.0)
    assert p.bound == "memory"


def test_roofline_compute_bound_uses_the_dtype_and_precision():
    flops = 2 * 4096**3  # 137.4 GFLOP
    bytes_ = 3 * 4096 * 4096 * 2
    p = roofline(bytes_, flops, 250.0, CEIL, "bfloat16")
    assert p.bound == "compute"
    assert p.roofline_us == pytest.approx(flops / 700e12 * 1e6)
    assert p.pct_of_roofline == pytest.approx(flops / 700e12 * 1e6 / 250.0 * 100)
    ieee = roofline(bytes_, flops, 5000.0, CEIL, "float32", "ieee")
    tf32 = roofline(bytes_, flops, 5000.0, CEIL, "float32", "tf32")
    assert ieee.roofline_us == pytest.approx(flops / 50e12 * 1e6)
    assert tf32.roofline_us == pytest.approx(flops / 400e12 * 1e6)


def test_roofline_without_ceilings_has_no_percentage():
    p = roofline(1e6, 0, 10.0, None, "float32")
    assert p == RooflinePoint(100.0, 0.0, None)


def test_roofline_rejects_nonsense():
    with pytest.raises(ValueError):
        roofline(1.0, 1.0, 0.0, CEIL, "float32")
    with pytest.raises(ValueError):
        roofline(-1.0, 1.0, 1.0, CEIL, "float32")
    with pytest.raises(ValueError, match="int8"):
        roofline(1.0, 1.0, 1.0, CEIL, "int8")
