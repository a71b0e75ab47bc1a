"""Stability inputs per declared domain include shifted and one-signed distributions: rows far from
zero on either side (and their analogues for positive, unit and probability inputs), all-positive
rows, each shifted variant moving one input; eager stays meaningful on them where a sound kernel is.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernellab.evaluate.options import EvalOptions
from kernellab.evaluate.reference import build_case
from kernellab.evaluate.session import EvalSession, _variant_transform
from kernellab.evaluate.tolerance import normalised_error, tolerance_for
from kernellab.evaluate.stages.correctness import STABILITY_KINDS, _eager_meaningful
from kernellab.tasks.load import load_task
from kernellab.tasks.materialize import (SHIFT, SHIFTED_KINDS, SHIFTS, device_generator, load_problem,
                                         perturb_for_domain)
from kernellab.tasks.model import Config, InputDomain, Visibility

ADVERSARIAL = Path(__file__).parents[1] / "adversarial"
KINDS = STABILITY_KINDS + SHIFTED_KINDS


@pytest.mark.parametrize("domain", [d for d in InputDomain if d is not InputDomain.INDEX])
@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_stays_inside_the_declared_domain(domain, kind):
    x = torch.zeros(64, 96, dtype=torch.float32)
    y = perturb_for_domain(x, domain, kind, device_generator("cpu", 5)).double()
    assert y.shape == x.shape and y.dtype == torch.float64 and bool(torch.isfinite(y).all())
    if domain is InputDomain.POSITIVE:
        assert bool((y > 0).all())
    elif domain is InputDomain.UNIT:
        assert bool(((y >= 0) & (y <= 1)).all())
    elif domain is InputDomain.PROBABILITY:
        assert bool((y >= 0).all()) and torch.allclose(y.sum(-1), torch.ones(64, dtype=torch.float64), atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_shifted_real_rows_are_one_signed_far_from_zero_with_a_unit_spread(dtype):
    x = torch.zeros(32, 256, dtype=dtype)
    for kind, sign in (("shifted_up", 1), ("shifted_down", -1)):
        y = perturb_for_domain(x, InputDomain.REAL, kind, device_generator("cpu", 3)).double()
        assert bool((sign * y > 0).all()), kind  # every element on one side of zero
        shift = SHIFTS.get(dtype, SHIFT)
        assert abs(float(y.mean()) - sign * shift) < 0.1 * shift
        assert 0.5 < float(y.std(dim=-1).mean()) < 2.0  # the spread stays ~1: variance cancels, exp overflows
    positive = perturb_for_domain(x, InputDomain.REAL, "positive_rows", device_generator("cpu", 3))
    assert bool((positive >= 0).all()) and float(positive.double().std()) > 0.3


def test_shifted_analogues_for_bounded_domains():
    x = torch.zeros(16, 128)
    gen = device_generator("cpu", 9)
    assert bool((perturb_for_domain(x, InputDomain.UNIT, "shifted_up", gen) >= 0.99).all())
    assert bool((perturb_for_domain(x, InputDomain.UNIT, "shifted_down", gen) <= 0.01).all())
    near_zero = perturb_for_domain(x, InputDomain.POSITIVE, "shifted_down", gen)
    assert bool((near_zero > 0).all()) and float(near_zero.max()) < 0.1
    assert float(perturb_for_domain(x, InputDomain.POSITIVE, "shifted_up", gen).min()) > 900
    peaked = perturb_for_domain(x, InputDomain.PROBABILITY, "shifted_up", gen)
    flat = perturb_for_domain(x, InputDomain.PROBABILITY, "shifted_down", gen)
    assert float(peaked.max(-1).values.mean()) > 0.5 > float(flat.max(-1).values.max())


def test_a_shifted_variant_moves_only_the_input_it_names():
    task = load_task(ADVERSARIAL / "tasks" / "vector_add")
    problem = load_problem(task, task.configs_of(Visibility.SMALL)[0])
    inputs = problem.inputs(0, "cpu", "float32")
    moved = _variant_transform("shifted_up:b", 7)(problem, [t.clone() for t in inputs])
    assert torch.equal(moved[0], inputs[0])
    assert float(moved[1].min()) > 900
    both = _variant_transform("positive_rows", 7)(problem, [t.clone() for t in inputs])
    assert bool((both[0] >= 0).all() and (both[1] >= 0).all())


@pytest.mark.parametrize("task_name", ["softmax", "logsumexp", "layernorm"])
@pytest.mark.parametrize("kind", ["shifted_up:x", "shifted_down:x", "positive_rows"])
def test_eager_stays_meaningful_on_the_new_inputs_in_float32(task_name, kind):
    """The stage skips a variant where eager itself is far off; for the ops these inputs are for, eager
    (max-subtracted softmax and log-sum-exp, Welford's variance) must be checkable in float32."""
    task = load_task(ADVERSARIAL / "tasks" / task_name)
    problem = load_problem(task, task.configs_of(Visibility.SMALL)[0])
    case = build_case(problem, "float32", 7, "cpu", transform=_variant_transform(kind, 7), precision_probe=False)
    assert _eager_meaningful(case), case.tolerances


def test_the_stage_runs_each_shifted_kind_on_each_input(tmp_path):
    task = load_task(ADVERSARIAL / "tasks" / "vector_add")
    options = EvalOptions(request_timeout_s=60, time_holdout=False, compile_baseline=False, dtypes=("float32",))
    with EvalSession(task, options) as session:
        verdict = session.evaluate(ADVERSARIAL / "candidates" / "vector_add" / "masked_add.py")
    assert verdict.status.value == "passed", verdict.error
    stability = next(s for s in verdict.stages if s.name.value == "stability")
    labels = {c.config.split(" [")[1].rstrip("]") for c in stability.configs}
    assert {"shifted_up:a", "shifted_up:b", "shifted_down:a", "shifted_down:b", "positive_rows"} <= labels


def _layernorm_two_pass(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float,
                        block: int = 256) -> torch.Tensor:
    """The textbook float32 kernel: a mean by a sequential sum, then the variance around it; on a
    constant row the mean is a few ulps off, which 1/sqrt(eps) amplifies."""
    n = x.shape[-1]
    lanes = torch.zeros(x.shape[:-1] + (block,), dtype=torch.float32)
    for chunk in x.split(block, dim=-1):  # a kernel's loop over column blocks, one accumulator per lane
        lanes = lanes + chunk
    mean = lanes.sum(-1) / n  # then a tree sum across the lanes
    centred = x - mean[..., None]
    var = (centred * centred).sum(-1) / n
    return centred * torch.rsqrt(var + eps)[..., None] * weight + bias


def _stability_case(variant: str, dtype: str = "float32"):
    task = load_task(ADVERSARIAL / "tasks" / "layernorm")
    problem = load_problem(task, Config.of({"M": 64, "N": 4096}, Visibility.SMALL))
    case = build_case(problem, dtype, 7, "cpu", transform=_variant_transform(variant, 7), precision_probe=False)
    return case, case.pristine[0], case.state["norm.weight"], case.state["norm.bias"]


def test_ill_conditioned_stability_inputs_allow_a_backward_stable_kernel():
    """Stability tolerances include the float64 reference's own movement under one rounding of every
    input: a two-pass LayerNorm on constant rows (exact output: the bias, while 1/sqrt(eps) amplifies
    the mean's last bits) is within it at any column block."""
    case, x, weight, bias = _stability_case("constant_rows")
    assert bool((x == x[..., :1]).all())
    for block in (64, 256, 1024):
        sound = _layernorm_two_pass(x, weight, bias, 1e-5, block)
        assert normalised_error(sound, case.ref_outputs[0])[1] <= case.tolerances[0], block
    assert case.tolerances[0] > 4 * tolerance_for(torch.float32, 0.0, 8, adversarial=True)  # widened here


def test_well_conditioned_stability_inputs_are_not_widened():
    """Where the exact function is well conditioned the reference barely moves, the tolerance stays at
    its adversarial floor, and a bfloat16 computation is still far above it."""
    case, x, weight, bias = _stability_case("mixed")
    assert case.tolerances[0] < 2 * tolerance_for(torch.float32, 0.0, 8, adversarial=True)
    downcast = _layernorm_two_pass(x.bfloat16().float(), weight.bfloat16().float(), bias.bfloat16().float(), 1e-5)
    assert normalised_error(downcast, case.ref_outputs[0])[1] > 3 * case.tolerances[0]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_inputs_widen_by_the_computations_rounding_not_their_own(dtype):
    """A kernel on bfloat16 or float16 values computes in float32: the reference's movement under one
    float32 rounding of every input is what a backward-stable kernel may add. Widened by the storage
    dtype's rounding (2^-8 for bfloat16), rows far from zero got tolerances 8-40x the adversarial
    floor, in which a LayerNorm that rounds each row's mean to bfloat16 passed on an H200."""
    case, x, weight, bias = _stability_case("shifted_up:x", dtype)
    assert float(x.float().mean()) > 50  # rows far from zero, where the widening was largest
    floor = tolerance_for(getattr(torch, dtype), 0.0, 8, adversarial=True)
    assert case.tolerances[0] < 2 * floor, (case.tolerances[0], floor)
    xf = x.float()
    sound = torch.nn.functional.layer_norm(xf, xf.shape[-1:], weight.float(), bias.float(), 1e-5).to(x.dtype)
    assert normalised_error(sound, case.ref_outputs[0])[1] <= case.tolerances[0]
