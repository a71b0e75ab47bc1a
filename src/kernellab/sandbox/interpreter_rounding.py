"""Triton's interpreter rounds float32 → bfloat16 as the GPU does.

The interpreter (triton 3.6-3.9) converts float32 to bfloat16 by dropping the low 16 bits: a
truncation, where a GPU's ``cvt.rn.bf16.f32`` rounds to nearest even. About half the elements of a
correct bfloat16 kernel then came out one unit in the last place low on the CPU, which failed the
fixed thresholds of imported suites (KernelBench-X's ``mul_bf16``: 1e-2 off at values near 3 against
``atol = rtol = 5e-3``) for kernels that pass them on a GPU. ``install`` puts a rounding conversion in
the interpreter's place, in the candidate's process before its code runs; every other conversion is
the interpreter's own. The stand-in is built ``detached``: nothing of the harness is reachable from it.
"""

from __future__ import annotations

from kernellab.sandbox.concealment import detached


def _rounding_cast(original, np, tl, handle):
    def cast_impl(self, src, dst_type):
        if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
            bits = np.ascontiguousarray(src.data, dtype=np.float32).view(np.uint32)
            nearest = ((bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16))
            quiet = (bits >> np.uint32(16)) | np.uint32(0x40)  # a NaN stays a NaN (no carry into the exponent)
            nan = (bits & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
            return handle(np.where(nan, quiet, nearest).astype(np.uint16), dst_type.scalar)
        return original(self, src, dst_type)

    return cast_impl


def install() -> bool:
    """Put the rounding conversion in place; False where this Triton has no interpreter builder to fix."""
    try:
        import numpy as np
        import triton.language as tl
        from triton.runtime import interpreter
    except ImportError:
        return False
    builder = getattr(interpreter, "InterpreterBuilder", None)
    original = getattr(builder, "cast_impl", None)
    if original is None or getattr(original, "__kernellab_rounding__", False):
        return False
    cast = detached(_rounding_cast(original, np, tl, interpreter.TensorHandle))
    cast.__kernellab_rounding__ = True
    builder.cast_impl = cast
    return True
