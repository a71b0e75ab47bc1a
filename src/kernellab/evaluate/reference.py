"""The judge's ground truth for one (config, dtype, seed): inputs, float64 outputs and tolerances.

The reference runs in float64 on exactly the values the candidate receives (the dtype-cast inputs,
upcast), so the only difference left is the candidate's arithmetic. Eager PyTorch in the task's
dtype is run beside it to scale the tolerance; for float32 tasks, eager in lower precisions too, so
a too-large error can be named a precision downcast when it looks like one.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from kernellab.evaluate.tolerance import adversarial_factor, compare_output, normalised_error, tolerance_for
from kernellab.tasks.materialize import (TORCH_DTYPES, Problem, build_model, cast_model, device_generator,
                                         flatten_outputs)
from kernellab.tasks.model import Comparator, InputDomain, OutputSpec, TaskError

log = logging.getLogger(__name__)

PARAM_SEED = 1234  # weights are the same for every trial; inputs change with the trial seed
# Unit roundoff of each dtype as a kernel computes in it: what one rounding of an input moves it by.
UNIT_ROUNDOFF = {torch.float64: 2.0 ** -53, torch.float32: 2.0 ** -24, torch.float16: 2.0 ** -11,
                 torch.bfloat16: 2.0 ** -8}
SENSITIVITY_SEED = 77  # the relative noise of ``_sensitivity``; any fixed seed


@dataclass
class Case:
    problem: Problem
    dtype: str
    seed: int
    device: str
    init_inputs: list[Any]
    inputs: list[Any]  # judge-owned, shared with the child; refilled in place between calls
    pristine: list[Any]  # the values ``inputs`` must hold before each call
    ref_outputs: list[torch.Tensor]  # flattened outputs, then the after-values of `mutates` inputs
    n_outputs: int  # how many of ref_outputs are the forward's own outputs
    tolerances: list[float]
    state: dict[str, torch.Tensor]  # reference weights in the task dtype, for the candidate
    eager_model: torch.nn.Module
    lower_precision_errs: list[dict[str, float]] = field(default_factory=list)
    # Backward cases: ``pristine_grad_outputs`` are the judge's own, and the reference gradients are
    # computed from them only; ``grad_outputs`` are copies, the only ones ever handed to a child,
    # restored before each call and compared with the pristine ones after it (judge memory handed
    # to a child is never the judge's own: on the GPU it crosses by CUDA IPC and can be written).
    grad_outputs: list[torch.Tensor] | None = None
    pristine_grad_outputs: list[torch.Tensor] | None = None
    ref_grads: dict[str, torch.Tensor] | None = None  # "input:<name>" / "param:<name>" -> float64
    grad_tolerances: dict[str, float] | None = None
    float64_fallback: bool = False
    probed: bool = False  # lower-precision probes done (made when a check of the case first fails)
    variant: str | None = None  # a stability variant (adversarial inputs), never a timing input set
    expected_outputs: list[torch.Tensor] = field(default_factory=list)  # meta tensors: eager shapes/dtypes

    @property
    def names(self) -> list[str]:
        return self.problem.input_names

    def mutated_indices(self) -> list[int]:
        return [i for i, n in enumerate(self.names) if n in self.problem.task.mutates]

    def grad_input_indices(self) -> list[int]:
        return [i for i, n in enumerate(self.names) if n in self.problem.task.grad_inputs]

    def restore_inputs(self) -> None:
        """Put the pristine values back into the memory handed to the child: inputs and grad_outputs."""
        with torch.no_grad():
            for live, value in zip(self.inputs, self.pristine):
                if isinstance(live, torch.Tensor):
                    live.requires_grad_(False)
                    live.copy_(value)
            for live, value in zip(self.grad_outputs or [], self.pristine_grad_outputs or []):
                live.copy_(value)
        if self.device == "cuda":
            # The child reads these tensors through CUDA IPC on its own stream: the copies above must
            # have landed before it is asked to run, or it reads the previous call's values.
            torch.cuda.synchronize()

    def named_inputs(self) -> dict[str, Any]:
        return dict(zip(self.names, self.pristine))


def _upcast(values: list[Any], device: str) -> list[Any]:
    return [v.detach().to(device=device, dtype=torch.float64).clone() if isinstance(v, torch.Tensor)
            and v.is_floating_point() else (v.clone() if isinstance(v, torch.Tensor) else v) for v in values]


def _run(model: torch.nn.Module, inputs: list[Any], mutated: list[int]) -> list[torch.Tensor]:
    with torch.no_grad():
        out = model(*inputs)
    outs = flatten_outputs(out)
    return outs + [inputs[i] for i in mutated]


def build_case(problem: Problem, dtype: str, seed: int, device: str, *, backward: bool = False,
               precision_probe: bool = True, transform: Callable[[Problem, list[Any]], list[Any]] | None = None
               ) -> Case:
    """The reference case; ``transform`` makes it a stability case (adversarial inputs, whose
    tolerances follow ``tolerance_for(adversarial=True)``)."""
    task = problem.task
    init_inputs = problem.init_inputs()
    torch_dtype = TORCH_DTYPES[dtype]
    base = build_model(problem.module.Model, init_inputs, PARAM_SEED, problem.task.keep_init)
    eager = cast_model(base, dtype, task.keep_dtype, device)
    state = {k: v.detach().clone() for k, v in list(eager.named_parameters()) + list(eager.named_buffers())}
    inputs = problem.inputs(seed, device, dtype)
    if transform is not None:
        inputs = transform(problem, inputs)
    pristine = [v.clone() if isinstance(v, torch.Tensor) else v for v in inputs]
    mutated = [i for i, n in enumerate(problem.input_names) if n in task.mutates]

    # The reference holds the very weights the candidate gets (rounded to the task dtype), upcast.
    ref_model = copy.deepcopy(eager)
    fallback = False
    try:
        ref_model = ref_model.to(torch.float64)
        ref_outputs = _run(ref_model, _upcast(pristine, device), mutated)
    except torch.OutOfMemoryError:
        # Not a missing float64 op: the device is short (other evaluations on it). A float32 reference
        # would quietly loosen every check of this case; the session frees memory and builds again.
        raise
    except (RuntimeError, NotImplementedError) as exc:  # an op without float64 support on this device
        log.info("float64 reference failed (%s); using float32", exc)
        fallback = True
        ref_model = ref_model.to(torch.float32)
        ref_outputs = [o.to(torch.float64) if o.is_floating_point() else o
                       for o in _run(ref_model, [v.float() if isinstance(v, torch.Tensor) and v.is_floating_point()
                                                 else v for v in _clone(pristine)], mutated)]
    ref_outputs = [o.detach().to(torch.float64) if o.is_floating_point() else o.detach() for o in ref_outputs]
    eager_outputs = _run_eager(eager, _clone(pristine), mutated, task.fp32_precision)
    if len(eager_outputs) != len(ref_outputs):
        raise TaskError(f"{task.id}: the reference returns a different number of outputs in {dtype}")
    tolerances = []
    # Only index comparators read inputs: upcast copies of them are made just for those.
    needs_inputs = any(spec.compare is Comparator.VALUES_AT_INDICES for spec in task.outputs)
    named = dict(zip(problem.input_names, _upcast(pristine, device))) if needs_inputs else {}
    for i, (o_eager, o_ref) in enumerate(zip(eager_outputs, ref_outputs)):
        # Eager's own error, measured through the output's comparator (for index outputs: the
        # values its indices select), scales the tolerance.
        spec = task.output_spec(i) if i < len(ref_outputs) - len(mutated) else OutputSpec()
        err = compare_output(o_eager, o_ref, spec, float("inf"), inputs=named).max_rel_err or 0.0
        # An infinite eager error (eager overflows where float64 does not) gives an infinite
        # tolerance, which the stability stage reads as "eager cannot do it either" and skips.
        tolerances.append(tolerance_for(torch_dtype, err if err == err else 0.0, task.tolerance_factor,
                                        adversarial=transform is not None, tf32=task.fp32_precision == "tf32"))
    if transform is not None and not fallback:
        tolerances = [max(t, adversarial_factor(task.tolerance_factor) * s) for t, s in
                      zip(tolerances, _sensitivity(problem, ref_model, pristine, ref_outputs, mutated, device,
                                                   _roundoff(torch_dtype, task.fp32_precision)))]
    case = Case(problem, dtype, seed, device, init_inputs, inputs, pristine, ref_outputs,
                len(ref_outputs) - len(mutated), tolerances, state, eager, float64_fallback=fallback)
    case.expected_outputs = [torch.empty(o.shape, dtype=o.dtype, device="meta")
                             for o in eager_outputs[:case.n_outputs]]
    if precision_probe:
        add_precision_probes(case)
    if backward:
        # The grad_outputs now (timing needs them); the float64 reference gradients when a check
        # first needs them (``ensure_gradients``): the timing stage's extra forward+backward input
        # sets are never checked, and their float64 backward passes were a large part of a cold run.
        _draw_grad_outputs(case)
    return case


def ensure_gradients(case: Case) -> bool:
    """Make the reference gradients and their tolerances of a backward case, once; True if it made them.

    The float64 reference model is a fresh float64 copy of the eager model, as ``build_case`` makes
    its own (a reference's forward keeps no state that changes its results: the task validator
    requires re-runs to agree)."""
    if case.grad_outputs is None or case.ref_grads is not None:
        return False
    model64 = None if case.float64_fallback else copy.deepcopy(case.eager_model).to(torch.float64)
    _add_gradients(case, model64)
    return True


def _roundoff(dtype: torch.dtype, fp32_precision: str) -> float:
    """The unit roundoff of the arithmetic a kernel of this dtype computes in: float32 for float16 and
    bfloat16 values (their storage rounding is the output tolerance's business, not a backward error
    a sound kernel adds), TF32 for float32 under ``fp32_precision = "tf32"``."""
    tf32 = dtype == torch.float32 and fp32_precision == "tf32"
    return 2.0 ** -11 if tf32 else min(UNIT_ROUNDOFF.get(dtype, 2.0 ** -24), UNIT_ROUNDOFF[torch.float32])


def _sensitivity(problem: Problem, ref_model: torch.nn.Module, pristine: list[Any], ref_outputs: list[torch.Tensor],
                 mutated: list[int], device: str, roundoff: float) -> list[float]:
    """How far each exact output moves when every floating input moves by one rounding (relative noise
    of the dtype's unit roundoff), as the normalised error of ``tolerance``. A backward-stable kernel
    is exact for inputs that close to its own, so its error is a small multiple of this: on the
    stability stage's ill-conditioned inputs (a constant row under LayerNorm amplifies input rounding
    by 1/sqrt(eps)) a sound two-pass mean is far above the float32 floor, and a downcast is still
    orders of magnitude above both."""
    generator = device_generator(device, SENSITIVITY_SEED)
    moved = []
    for name, value in zip(problem.input_names + [""] * len(pristine), _upcast(pristine, device)):
        if isinstance(value, torch.Tensor) and value.is_floating_point() \
                and problem.task.domain_of(name) is not InputDomain.INDEX:
            noise = torch.rand(value.shape, generator=generator, dtype=torch.float64, device=value.device)
            value = value * (1.0 + roundoff * (2.0 * noise - 1.0))
        moved.append(value)
    outputs = _run(ref_model, moved, mutated)
    return [normalised_error(o, r)[1] if o.is_floating_point() and r.is_floating_point() else 0.0
            for o, r in zip(outputs, ref_outputs)]


def _clone(values: list[Any]) -> list[Any]:
    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


def _run_eager(model: torch.nn.Module, inputs: list[Any], mutated: list[int], precision: str) -> list[torch.Tensor]:
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = precision == "tf32"
    try:
        return _run(model, inputs, mutated)
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def add_precision_probes(case: Case) -> None:
    """Eager's errors in lower precisions, which name a float32 candidate's downcast; once per case."""
    if case.probed:
        return
    case.probed = True
    if case.dtype == "float32":
        case.lower_precision_errs = _lower_precision_errors(
            case.problem, case.init_inputs, case.pristine, case.ref_outputs, case.mutated_indices(), case.device,
            case.problem.task.fp32_precision)


def _lower_precision_errors(problem: Problem, init_inputs, pristine, ref_outputs, mutated, device,
                            precision: str) -> list[dict[str, float]]:
    """Errors of eager PyTorch run in precisions below the task's, per output (for naming downcasts)."""
    probes: dict[str, list[float]] = {}
    for label, dtype, tf32 in (("float16", "float16", False), ("bfloat16", "bfloat16", False),
                               ("tf32", "float32", True)):
        if label == "tf32" and (precision == "tf32" or device != "cuda"):
            continue
        try:
            model = cast_model(build_model(problem.module.Model, init_inputs, PARAM_SEED, problem.task.keep_init), dtype,
                               problem.task.keep_dtype, device)
            # copy=True: ``.to`` of a tensor already in ``dtype`` returns the tensor itself, and a
            # task that mutates its inputs would then write into the pristine copy.
            inputs = [v.to(TORCH_DTYPES[dtype], copy=True) if isinstance(v, torch.Tensor) and v.is_floating_point()
                      and n not in problem.task.keep_dtype else (v.clone() if isinstance(v, torch.Tensor) else v)
                      for v, n in zip(pristine, problem.input_names + [""] * len(pristine))]
            outs = _run_eager(model, inputs, mutated, "tf32" if tf32 else "ieee")
            probes[label] = [normalised_error(o, r)[1] if r.is_floating_point() else 0.0
                             for o, r in zip(outs, ref_outputs)]
        except Exception as exc:  # noqa: BLE001 - a probe that cannot run says nothing
            log.debug("precision probe %s failed: %s", label, exc)
    return [{label: errs[i] for label, errs in probes.items()} for i in range(len(ref_outputs))]


def _draw_grad_outputs(case: Case) -> None:
    """The random grad_output of a backward case: one per forward output, in the task dtype; the
    judge keeps its own and hands out copies (``Case.grad_outputs``)."""
    gen = device_generator(case.device, case.seed + 17)
    outs_ref = case.ref_outputs[:case.n_outputs]
    case.pristine_grad_outputs = [torch.randn(o.shape, generator=gen, dtype=torch.float32, device=case.device)
                                  .to(TORCH_DTYPES[case.dtype]) for o in outs_ref]
    case.grad_outputs = [g.clone() for g in case.pristine_grad_outputs]


def _add_gradients(case: Case, ref_model_64: torch.nn.Module | None) -> None:
    """Reference gradients in float64 for the case's grad_output, and tolerances from eager's own."""
    task = case.problem.task
    grad_idx = case.grad_input_indices()

    def grads_of(model: torch.nn.Module, inputs: list[Any], to64: bool) -> dict[str, torch.Tensor]:
        leaves = [inputs[i].detach().clone().requires_grad_(True) for i in grad_idx]
        args = list(inputs)
        for j, i in enumerate(grad_idx):
            args[i] = leaves[j]
        params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        outs = flatten_outputs(model(*args))
        # The judge's own grad_outputs: the copies in ``case.grad_outputs`` have been in a child.
        gos = [g.to(o.dtype) for g, o in zip(case.pristine_grad_outputs, outs)]
        got = torch.autograd.grad(outs, leaves + [p for _, p in params], gos, allow_unused=True)
        names = [f"input:{case.names[i]}" for i in grad_idx] + [f"param:{n}" for n, _ in params]
        return {n: (g.to(torch.float64) if to64 and g is not None else g) for n, g in zip(names, got)}

    model64 = ref_model_64 if ref_model_64 is not None else case.eager_model
    ref = grads_of(model64, _upcast(case.pristine, case.device) if ref_model_64 is not None else _clone(case.pristine),
                   True)
    eager = grads_of(case.eager_model, _clone(case.pristine), False)
    case.ref_grads = {k: v for k, v in ref.items() if v is not None}
    case.grad_tolerances = {}
    for name, g in case.ref_grads.items():
        err = normalised_error(eager[name], g)[1] if eager.get(name) is not None else 0.0
        case.grad_tolerances[name] = tolerance_for(TORCH_DTYPES[case.dtype], err, task.tolerance_factor,
                                                   tf32=task.fp32_precision == "tf32")


def case_nbytes(case: Case) -> int:
    """Device bytes a case holds (inputs, pristine copies, float64 references, weights)."""
    tensors = [*case.inputs, *case.pristine, *case.ref_outputs, *case.state.values(),
               *(case.ref_grads or {}).values(), *(case.grad_outputs or []), *(case.pristine_grad_outputs or [])]
    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))
