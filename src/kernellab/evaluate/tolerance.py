"""Comparing a candidate's output with the float64 reference.

The error measure is normalised by the reference's RMS, so one threshold serves outputs of any
scale: ``err = max|out - ref| / rms(ref)``. The tolerance is error-scaled: ``max(floor[dtype],
tolerance_factor × err(eager PyTorch in that dtype vs float64))``: a kernel may be as inexact as the
framework itself, times a factor, but never looser than the floor allows nor tighter than rounding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from kernellab.tasks.model import Comparator, OutputSpec

# Floors per dtype: the smallest tolerance, for ops whose eager error is ~0 (copies, exact ops).
FLOORS = {torch.float64: 1e-10, torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
# float32 where the task allows TF32 (``fp32_precision = "tf32"``): inputs rounded to a 10-bit
# mantissa, 8 units of roundoff (2^-11) as bfloat16's floor is 8 of its own. Eager cannot set this
# floor itself: cuBLAS runs small or degenerate shapes (M = 1, K = 1) without TF32 at all.
TF32_FLOOR = 8 * 2.0 ** -11
# On the stability stage's adversarial inputs, sound float32 implementations of one op are further
# apart than on ordinary ones: on mixed-scale attention inputs (q, k, v scaled by e^(2N)) eager
# SDPA's error ranged 1e-5 to 2.6e-3 over 8 seeds, and on one seed eager's efficient kernel, its math
# path and a flash-style Triton kernel were 2.5e-5, 8.1e-5 and 4.8e-4 off (H100,
# docs/results/h100_attention_fp32_mixed.json): accumulation order, not the algorithm, decides. The
# factor is widened by this much there. What those inputs catch (overflow without max subtraction, a
# one-pass variance, a downcast) misses by orders of magnitude, not by 4x.
ADVERSARIAL_WIDENING = 4
_TINY = 1e-30


@dataclass
class Comparison:
    passed: bool
    max_abs_err: float | None
    max_rel_err: float | None  # the normalised error the tolerance applies to
    tolerance: float | None
    problem: str | None = None  # why it failed, in a few words


# Elements compared per step: the float64 temporaries of a comparison stay a few hundred MB whatever
# the output's size. Whole, a 4096 x 393216 output's comparison held six float64 copies (77 GB) and
# ran out of memory on an 80 GB GPU with nothing else on it.
CHUNK = 1 << 24


def normalised_error(out: torch.Tensor, ref: torch.Tensor) -> tuple[float, float]:
    """(max absolute error, max |out-ref| / rms(ref)); NaN or inf where the reference is finite → inf.
    Computed in float64, ``CHUNK`` elements at a time."""
    out, ref = out.detach(), ref.detach()
    if out.numel() == 0:
        return 0.0, 0.0
    if out.shape != ref.shape:
        out, ref = torch.broadcast_tensors(out, ref)
    out, ref = out.reshape(-1), ref.reshape(-1)
    max_abs, scale = 0.0, 0.0
    for start in range(0, out.numel(), CHUNK):
        out64 = out[start:start + CHUNK].to(torch.float64)
        ref64 = ref[start:start + CHUNK].to(torch.float64)
        finite = torch.isfinite(ref64)
        diff = (out64 - ref64).abs()
        # Same non-finite values in the same places match (inf == inf); NaN never matches a number.
        same_special = (~finite) & ((out64 == ref64) | (torch.isnan(out64) & torch.isnan(ref64)))
        diff = torch.nan_to_num(diff.masked_fill_(same_special, 0.0), nan=float("inf"))
        max_abs = max(max_abs, float(diff.max()))
        scale = max(scale, float(ref64.abs().masked_fill_(~finite, 0.0).max()))
    if max_abs == 0.0:
        return 0.0, 0.0
    return max_abs, max_abs / max(_chunked_rms(ref, scale), _TINY)


def _chunked_rms(ref: torch.Tensor, scale: float) -> float:
    """``rms`` of ``ref``'s finite values (flat), whose largest magnitude is ``scale``, by chunks."""
    if scale == 0.0:
        return 0.0
    total, count = 0.0, 0
    for start in range(0, ref.numel(), CHUNK):
        ref64 = ref[start:start + CHUNK].to(torch.float64)
        finite = torch.isfinite(ref64)
        total += float((ref64 / scale).masked_fill_(~finite, 0.0).pow_(2).sum())
        count += int(finite.sum())
    return scale * (total / count) ** 0.5 if count else 0.0


def rms(values: torch.Tensor) -> float:
    """Root mean square, scaled by the largest magnitude first: squares of finite float64 values
    above 1e154 overflow (a float16 prefix product's float64 reference reaches 1e200), and an
    infinite RMS turned every error into NaN, which read as no error at all."""
    if values.numel() == 0:
        return 0.0
    return _chunked_rms(values.reshape(-1), float(values.abs().max()))


def adversarial_factor(factor: float) -> float:
    """The task's tolerance factor as it applies to the stability stage's adversarial inputs."""
    return factor * ADVERSARIAL_WIDENING


def tolerance_for(dtype: torch.dtype, eager_err: float, factor: float, *, adversarial: bool = False,
                  tf32: bool = False) -> float:
    """``max(floor, factor × eager error)``. For the stability stage's adversarial inputs the factor
    is widened (``ADVERSARIAL_WIDENING``) and applies to the floor too: there eager can be exact by
    luck (a constant row has zero variance in Welford's algorithm) while any other sound algorithm,
    such as a two-pass mean, loses a few ulps that 1/sqrt(eps) amplifies; what those inputs test is
    robustness, not the last bits. ``tf32``: the task allows TF32 for float32 (its floor is
    ``TF32_FLOOR``)."""
    floor = TF32_FLOOR if tf32 and dtype == torch.float32 else FLOORS.get(dtype, 1e-5)
    return adversarial_factor(factor) * max(floor, eager_err) if adversarial else max(floor, factor * eager_err)


def compare_output(out: torch.Tensor, ref: torch.Tensor, spec: OutputSpec, tolerance: float,
                   inputs: dict[str, torch.Tensor] | None = None, ref_input_values: torch.Tensor | None = None
                   ) -> Comparison:
    """Compare one output; shapes and dtypes are the caller's (output-contract) business."""
    if spec.compare is Comparator.EXACT:
        equal = bool(torch.equal(out, ref.to(out.dtype))) if out.shape == ref.shape else False
        abs_err, rel = normalised_error(out, ref)
        return Comparison(equal, abs_err, rel, 0.0, None if equal else "not bitwise equal")
    if spec.compare is Comparator.ULP:
        return _compare_ulp(out, ref, spec.ulp)
    if spec.compare is Comparator.VALUES_AT_INDICES:
        return _compare_values_at_indices(out, ref, spec, tolerance, inputs or {})
    if spec.compare is Comparator.FIXED and spec.fixed is not None:
        return compare_fixed(out, ref, spec.fixed.for_dtype(str(out.dtype).removeprefix("torch.")))
    abs_err, rel = normalised_error(out, ref)
    passed = rel <= tolerance
    return Comparison(passed, abs_err, rel, tolerance, None if passed else "error above tolerance")


def fixed_metrics(out: torch.Tensor, ref: torch.Tensor) -> dict[str, float]:
    """The measures suites threshold, against the float64 reference: the largest ``|out - ref| /
    (atol + rtol |ref|)`` is left to the caller; here cosine similarity of the flattened tensors (both
    all-zero: 1; one all-zero: 0), relative L1 ``sum|out - ref| / sum|ref|`` and RMSE."""
    x, r = out.detach().to(torch.float64).reshape(-1), ref.detach().to(torch.float64).reshape(-1)
    if x.numel() == 0:
        return {"cosine": 1.0, "l1": 0.0, "rmse": 0.0}
    nx, nr = float(torch.linalg.vector_norm(x)), float(torch.linalg.vector_norm(r))
    if nx < 1e-12 and nr < 1e-12:
        cosine = 1.0
    elif nx < 1e-12 or nr < 1e-12:
        cosine = 0.0
    else:
        cosine = float(torch.dot(x / nx, r / nr))
    diff = (x - r).abs()
    return {"cosine": cosine, "l1": float(diff.sum() / r.abs().sum().clamp_min(1e-12)),
            "rmse": float(diff.pow(2).mean().sqrt())}


def compare_fixed(out: torch.Tensor, ref: torch.Tensor, thresholds: dict[str, float]) -> Comparison:
    """A suite's own criteria (``compare = "fixed"``), each that the task sets for this dtype:
    ``atol``/``rtol`` as ``torch.allclose`` (NaN matches NaN, inf matches the same inf), and
    ``cosine`` (at least), ``l1`` and ``rmse`` (at most). No eager-scaled tolerance is involved.

    The float64 reference is first rounded to the output's dtype: suites compare two results in that
    dtype, so their thresholds never had to absorb its rounding (GPU MODE's float16 vector add asks
    rtol 1e-5, which a correctly rounded sum meets against a float16 reference and misses by half an
    ulp against a float64 one)."""
    abs_err, rel = normalised_error(out, ref)  # reported, and what eager-scaled tolerances are made of
    if out.is_floating_point() and ref.is_floating_point():
        ref = ref.to(out.dtype).to(torch.float64)
    if out.shape != ref.shape:
        return Comparison(False, abs_err, rel, None, "shape differs")
    failed = []
    if "atol" in thresholds or "rtol" in thresholds:
        atol, rtol = thresholds.get("atol", 0.0), thresholds.get("rtol", 0.0)
        o64, r64 = out.detach().to(torch.float64), ref.detach().to(torch.float64)
        if not torch.allclose(o64, r64, rtol=rtol, atol=atol, equal_nan=True):
            worst = float((o64 - r64).abs().nan_to_num(nan=float("inf")).max()) if o64.numel() else 0.0
            failed.append(f"max |out - ref| {worst:.3g} beyond atol {atol:g} + rtol {rtol:g} |ref|")
    if any(k in thresholds for k in ("cosine", "l1", "rmse")):
        measured = fixed_metrics(out, ref)
        if "cosine" in thresholds and not measured["cosine"] >= thresholds["cosine"]:
            failed.append(f"cosine {measured['cosine']:.6g} below {thresholds['cosine']:g}")
        for key in ("l1", "rmse"):
            if key in thresholds and not measured[key] <= thresholds[key]:
                failed.append(f"{key} {measured[key]:.3g} above {thresholds[key]:g}")
    return Comparison(not failed, abs_err, rel, None, "; ".join(failed) or None)


def _compare_ulp(out: torch.Tensor, ref: torch.Tensor, ulp: int) -> Comparison:
    if not out.is_floating_point():
        distance = (out.to(torch.int64) - ref.to(torch.int64)).abs()
    else:
        ref_cast = ref.to(out.dtype)
        spacing = _ulp_of(ref_cast)
        distance = ((out.to(torch.float64) - ref_cast.to(torch.float64)).abs() / spacing)
        distance = torch.nan_to_num(distance, nan=float("inf"))
    worst = float(distance.max()) if distance.numel() else 0.0
    abs_err, _ = normalised_error(out, ref)
    return Comparison(worst <= ulp, abs_err, worst, float(ulp), None if worst <= ulp else f"{worst:g} ulp apart")


def _ulp_of(x: torch.Tensor) -> torch.Tensor:
    """The spacing of ``x``'s dtype at each value, exactly: the exponent from ``frexp`` and the power
    of two written as float64 bits, where ``log2`` and ``pow`` on a GPU may be an ulp off (a 1-ulp
    fp8 difference then measured a hair over 1 ulp and failed ``ulp = 1`` on the H100)."""
    info = torch.finfo(x.dtype)
    x64 = x.to(torch.float64).abs().clamp_min(info.tiny)
    _, exponent = torch.frexp(x64)  # x = m * 2^e with m in [0.5, 1): floor(log2 x) = e - 1
    # float32 and narrower: at least 2^-149, a normal float64; float64 subnormals get 2^-1022
    power = (exponent.to(torch.int64) - 1 - _mantissa(x.dtype)).clamp_min(-1022)
    return ((power + 1023) << 52).view(torch.float64)


def _mantissa(dtype: torch.dtype) -> int:
    """Explicit mantissa bits of a floating dtype, from its epsilon (2^-bits): fp8's 3 (e4m3) and 2
    (e5m2) included, whose ulps a fixed table once counted as float32's, 2^20 times too small."""
    return round(-math.log2(torch.finfo(dtype).eps))


def _compare_values_at_indices(out: torch.Tensor, ref: torch.Tensor, spec: OutputSpec, tolerance: float,
                               inputs: dict[str, torch.Tensor]) -> Comparison:
    """Index outputs with ties: the values the indices select must equal the values the reference selects."""
    source = inputs.get(spec.of or "")
    if source is None:
        return Comparison(False, None, None, tolerance, f"input {spec.of!r} not found for values_at_indices")
    if out.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        return Comparison(False, None, None, tolerance, "index output is not an integer tensor")
    src = source.detach().to(torch.float64).to(out.device)
    dim = spec.dim
    if spec.through == "softmax":
        src = torch.softmax(src.to(torch.float32), dim=dim).to(torch.float64)
    n = src.shape[dim]
    if bool(((out < 0) | (out >= n)).any()):
        return Comparison(False, None, None, tolerance, "index out of range")
    picked = _gather(src, out.to(torch.int64), dim)
    expected = _gather(src, ref.to(torch.int64).to(out.device), dim)
    abs_err, rel = normalised_error(picked, expected)
    passed = rel <= tolerance
    return Comparison(passed, abs_err, rel, tolerance, None if passed else "selected values differ")


def _gather(src: torch.Tensor, idx: torch.Tensor, dim: int) -> torch.Tensor:
    if idx.dim() == src.dim():
        return torch.gather(src, dim, idx)
    # argmax-style: the index dimension was reduced away
    return torch.gather(src, dim, idx.unsqueeze(dim)).squeeze(dim)
