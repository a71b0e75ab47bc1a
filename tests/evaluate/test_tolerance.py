"""Comparators and error-scaled tolerances against hand-computed values."""

from __future__ import annotations

import math

import pytest
import torch

from kernellab.evaluate.tolerance import ADVERSARIAL_WIDENING, FLOORS, compare_output, normalised_error, tolerance_for
from kernellab.tasks.model import Comparator, OutputSpec


def test_normalised_error_is_relative_to_rms():
    ref = torch.tensor([3.0, 4.0], dtype=torch.float64)  # rms = sqrt(12.5)
    out = torch.tensor([3.0, 4.5])
    abs_err, rel = normalised_error(out, ref)
    assert abs_err == 0.5
    assert math.isclose(rel, 0.5 / math.sqrt(12.5), rel_tol=1e-12)


def test_nan_never_matches_a_number_but_matching_infs_do():
    ref = torch.tensor([1.0, float("inf")], dtype=torch.float64)
    assert normalised_error(torch.tensor([1.0, float("inf")]), ref)[1] == 0.0
    assert normalised_error(torch.tensor([float("nan"), float("inf")]), ref)[1] == float("inf")


def test_tolerance_takes_the_larger_of_floor_and_scaled_eager_error():
    assert tolerance_for(torch.float16, 0.0, 8) == FLOORS[torch.float16]
    assert tolerance_for(torch.float16, 1e-3, 8) == 8e-3


def test_allclose_passes_within_and_fails_beyond():
    ref = torch.ones(10, dtype=torch.float64)
    assert compare_output(ref.float() + 1e-6, ref, OutputSpec(), 1e-5).passed
    assert not compare_output(ref.float() + 1e-3, ref, OutputSpec(), 1e-5).passed


def test_exact_and_ulp():
    ref = torch.tensor([1, 2, 3], dtype=torch.int8)
    assert compare_output(ref.clone(), ref, OutputSpec(Comparator.EXACT), 0).passed
    assert not compare_output(torch.tensor([1, 2, 4], dtype=torch.int8), ref, OutputSpec(Comparator.EXACT), 0).passed
    assert compare_output(torch.tensor([1, 2, 4], dtype=torch.int8), ref, OutputSpec(Comparator.ULP, ulp=1), 0).passed
    x = torch.tensor([1.0], dtype=torch.float16)
    next_up = torch.nextafter(x, torch.tensor([2.0], dtype=torch.float16))
    assert compare_output(next_up, x.double(), OutputSpec(Comparator.ULP, ulp=1), 0).passed
    assert not compare_output(next_up, x.double(), OutputSpec(Comparator.ULP, ulp=0), 0).passed


def test_values_at_indices_accepts_ties_and_rejects_wrong_picks():
    x = torch.tensor([[1.0, 5.0, 5.0, 0.0]])
    spec = OutputSpec(Comparator.VALUES_AT_INDICES, of="x", dim=-1)
    ref = torch.tensor([1])
    assert compare_output(torch.tensor([2]), ref, spec, 1e-6, inputs={"x": x}).passed  # the other max
    assert not compare_output(torch.tensor([0]), ref, spec, 1e-6, inputs={"x": x}).passed
    assert not compare_output(torch.tensor([9]), ref, spec, 1e-6, inputs={"x": x}).passed  # out of range


def test_values_at_indices_through_softmax_sees_ties_the_logits_do_not():
    # an MoE router at large logits: every expert but the first has float32 probability 0
    logits = torch.tensor([[1e4, -1e4, -2e4, 5e3]])
    ref = torch.tensor([[0, 1]])  # the reference's tie-break among the zero-probability experts
    plain = OutputSpec(Comparator.VALUES_AT_INDICES, of="logits", dim=-1)
    through = OutputSpec(Comparator.VALUES_AT_INDICES, of="logits", dim=-1, through="softmax")
    other_tie = torch.tensor([[0, 2]])
    assert not compare_output(other_tie, ref, plain, 1e-6, inputs={"logits": logits}).passed
    assert compare_output(other_tie, ref, through, 1e-6, inputs={"logits": logits}).passed
    # a pick that is not a tie is still wrong: expert 3 is not the top-1
    assert not compare_output(torch.tensor([[3, 1]]), ref, through, 1e-6, inputs={"logits": logits}).passed


def test_adversarial_inputs_scale_the_floor_too():
    widened = 8 * ADVERSARIAL_WIDENING
    assert tolerance_for(torch.float32, 0.0, 8, adversarial=True) == widened * FLOORS[torch.float32]
    assert tolerance_for(torch.float32, 1e-3, 8, adversarial=True) == widened * 1e-3
    assert tolerance_for(torch.float32, float("inf"), 8) == float("inf")  # eager cannot do it either


def _tf32(x: torch.Tensor) -> torch.Tensor:
    """Round float32 to TF32's 10-bit mantissa (to nearest), as tensor cores read their inputs."""
    bits = x.contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


def test_a_tf32_product_passes_where_the_task_allows_tf32_and_fails_where_it_does_not():
    # M=1, K=1: eager (cuBLAS) runs such a shape without TF32, so its error cannot set the tolerance.
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(1, 1, generator=g), torch.randn(1, 17, generator=g)
    ref = a.double() @ b.double()
    out = (_tf32(a) @ _tf32(b)).to(torch.float64)
    spec = OutputSpec()
    err = normalised_error(out, ref)[1]
    assert err > 1e-4  # TF32 rounding shows
    assert compare_output(out, ref, spec, tolerance_for(torch.float32, 0.0, 8, tf32=True)).passed
    assert not compare_output(out, ref, spec, tolerance_for(torch.float32, 0.0, 8)).passed


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2, torch.bfloat16, torch.float16, torch.float32])
def test_one_ulp_is_one_ulp_in_every_floating_dtype(dtype):
    ref = torch.tensor([1.0, -3.0, 100.0], dtype=torch.float64)
    cast = ref.to(dtype)
    bits = cast.view(torch.uint8 if cast.element_size() == 1 else torch.int16 if cast.element_size() == 2 else torch.int32)
    one_up = (bits + 1).view(dtype)  # the next representable magnitude
    assert compare_output(one_up, ref, OutputSpec(compare=Comparator.ULP, ulp=1), 0.0).passed
    two_up = (bits + 2).view(dtype)
    result = compare_output(two_up, ref, OutputSpec(compare=Comparator.ULP, ulp=1), 0.0)
    assert not result.passed and result.max_rel_err == pytest.approx(2.0)


def test_errors_of_outputs_whose_squares_overflow_are_still_measured():
    """A float64 reference of 1e200 (a float16 prefix product of heavy-tailed factors): its squares
    overflow, and the error once came out NaN, which the tolerance read as eager being exact."""
    ref = torch.tensor([1e200, -3e199, 2e150, 1.0], dtype=torch.float64)
    _, rel = normalised_error(ref * (1 + 1e-3), ref)
    # max |diff| = 1e197 at the first element; rms = 1e200 * sqrt((1 + 0.09) / 4)
    assert rel == pytest.approx(1e-3 / math.sqrt(1.09 / 4), rel=1e-6)
    _, overflowed = normalised_error(torch.tensor([float("inf"), -3e199, 2e150, 1.0], dtype=torch.float64), ref)
    assert overflowed > 1.0  # an output that overflowed where the reference did not is far off, not exact


def test_the_error_computed_by_chunks_is_the_whole_tensors(monkeypatch):
    """Chunks of 1,000 elements over a 10,007-element output with NaN, inf and a spread of scales give
    the error computed on the whole tensor at once (the definition: max |out - ref| / rms of ref's
    finite values, matching non-finite values count as equal)."""
    from kernellab.evaluate import tolerance

    generator = torch.Generator().manual_seed(0)
    ref = torch.randn(10007, generator=generator, dtype=torch.float64) * torch.logspace(-3, 3, 10007,
                                                                                          dtype=torch.float64)
    ref[[5, 4000]] = float("inf")
    ref[9000] = float("nan")
    out = (ref + 1e-4 * torch.randn(10007, generator=generator, dtype=torch.float64)).to(torch.float32)
    out[[5, 4000, 9000]] = ref[[5, 4000, 9000]].to(torch.float32)  # the same specials: no error there
    finite = torch.isfinite(ref)
    diff = (out.to(torch.float64) - ref).abs()[finite]
    expected_abs = float(diff.max())
    expected_rel = expected_abs / float(ref[finite].pow(2).mean().sqrt())
    monkeypatch.setattr(tolerance, "CHUNK", 1000)
    max_abs, rel = tolerance.normalised_error(out.reshape(1, 10007), ref.reshape(1, 10007))
    assert max_abs == expected_abs
    assert rel == pytest.approx(expected_rel, rel=1e-12)
    out[7000] = float("nan")  # a NaN where the reference is finite: infinitely wrong
    assert tolerance.normalised_error(out, ref) == (float("inf"), float("inf"))


def test_the_device_side_check_of_timed_outputs_agrees_by_chunks(monkeypatch):
    """The timed calls' on-device check (``timing_slots._beyond``) by chunks of 1,000: beyond exactly
    where the whole-tensor error is above the tolerance, and a non-finite reference always beyond."""
    from kernellab.evaluate import timing_slots

    monkeypatch.setattr(timing_slots, "CHUNK", 1000)
    generator = torch.Generator().manual_seed(1)
    ref = torch.randn(4097, generator=generator, dtype=torch.float64)
    out = (ref + 1e-3 * torch.randn(4097, generator=generator, dtype=torch.float64)).to(torch.float32)
    _, rel = normalised_error(out, ref)
    assert not bool(timing_slots._beyond(out, ref, rel * 1.01))
    assert bool(timing_slots._beyond(out, ref, rel * 0.99))
    ref[4096] = float("inf")
    assert bool(timing_slots._beyond(out, ref, 1e9))
