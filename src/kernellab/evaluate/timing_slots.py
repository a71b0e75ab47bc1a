"""Fresh input values for every timed call, and the judge's check of what every timed call returned.

Invariant 1 of ARCHITECTURE.md: every call the candidate sees is a checked call. The timing stage
times the candidate in rounds (``sandbox.round_clock``); before each round the judge writes values
drawn from a secret seed (per evaluation, never derived from the public seed, so the child cannot
draw them ahead) into the slots it shares with the child, and after the round it checks every
call's outputs, updated ``mutates`` inputs and gradients against the float64 reference of the
values that call received. A candidate that can tell timing from checking gains nothing: a
remembered output is wrong for fresh values, and a call that skips work is caught on that call.

The tolerance is the one the checked case of the same config and dtype got, times
``TIMED_SLACK``: eager's own error, which scales each tolerance, varies a little from one set of
values to the next. Comparators that do not use a tolerance (``exact``, ``ulp``) are unchanged.

What a round costs the judge: drawing the values (the reference's own ``get_inputs``, on the
device), one float64 forward (and backward) per call, and one comparison per output.
"""

from __future__ import annotations

import copy
import secrets
from dataclasses import dataclass, field
from typing import Any

import torch

from kernellab.evaluate.checking import (CallOutcome, bitwise_equal, compare_all, compare_grads, input_mutation,
                                         output_contract)
from kernellab.evaluate.reference import Case, ensure_gradients
from kernellab.evaluate.tolerance import _TINY, CHUNK
from kernellab.evaluate.verdict import ConfigCheck, Violation, ViolationKind
from kernellab.sandbox.evidence import as_bits
from kernellab.tasks.materialize import TORCH_DTYPES, device_generator, flatten_outputs
from kernellab.tasks.model import Comparator, OutputSpec

TIMED_SLACK = 1.5
# Fresh values go into the slots' memory, so a draw must have the slot's sizes. A reference whose
# get_inputs sizes a buffer by a random total rarely repeats them: this many draws, then no timing.
LAYOUT_DRAWS = 32


class VaryingInputSizes(ValueError):
    """The reference's inputs change size from one draw to the next: fresh values cannot go into the
    memory the timed calls read (the child maps it once; a graph replays its addresses)."""


@dataclass
class Slot:
    """One input set of the timing rounds: memory shared with the child, and what was written there."""

    inputs: list[Any]  # judge memory the child reads; fresh values before every round
    pristine: list[Any] = field(default_factory=list)  # this round's values, never sent
    grad_outputs: list[torch.Tensor] | None = None  # shared, fresh every round (forward+backward rows)
    grad_pristine: list[torch.Tensor] | None = None
    truth: tuple | None = None  # the float64 references of this round's values, once computed

    def message(self) -> dict[str, Any]:
        return {"inputs": self.inputs, "grad_outputs": self.grad_outputs} if self.grad_outputs is not None \
            else {"inputs": self.inputs}


class TimingSlots:
    """The slots of one timing row, refreshed before every round and checked after it.

    ``case`` is the checked case of the row's config and dtype (forward rows: the case the sweep
    or the holdout stage checked; forward+backward rows: the backward stage's): it gives the model,
    the tolerances and the structure the fresh values must have.
    """

    def __init__(self, case: Case, count: int, backward: bool) -> None:
        self.case = case
        self.backward = backward
        self.device = case.device
        self.mutated = case.mutated_indices()
        self.wrt = case.grad_input_indices() if backward else []
        self._seeds = secrets.SystemRandom()
        self._model64: torch.nn.Module | None = None
        self.grad_names = self._grad_names() if backward else []
        if backward:
            ensure_gradients(case)  # the gradient tolerances of the checked case
        self.slots = [self._new_slot() for _ in range(max(1, count))]

    # ------------------------------------------------------------------------------------ values

    def _draw(self) -> tuple[list[Any], list[torch.Tensor] | None]:
        seed = self._seeds.randrange(1 << 62)
        inputs = self.case.problem.inputs(seed, self.device, self.case.dtype)
        grads = None
        if self.backward:
            gen = device_generator(self.device, seed + 17)
            grads = [torch.randn(o.shape, generator=gen, dtype=torch.float32, device=self.device)
                     .to(TORCH_DTYPES[self.case.dtype]) for o in self.case.ref_outputs[:self.case.n_outputs]]
        return inputs, grads

    def _draw_fitting(self, slot: Slot) -> tuple[list[Any], list[torch.Tensor] | None]:
        for _ in range(LAYOUT_DRAWS):
            inputs, grads = self._draw()
            if len(inputs) == len(slot.inputs) and all(
                    not isinstance(live, torch.Tensor) or isinstance(v, torch.Tensor) and v.shape == live.shape
                    and v.dtype == live.dtype for live, v in zip(slot.inputs, inputs)):
                return inputs, grads
        raise VaryingInputSizes(f"{self.case.problem.config.label}: the reference's inputs change size from one "
                                f"draw to the next (no timing: fresh values must fit the memory the timed calls read)")

    def _new_slot(self) -> Slot:
        inputs, grads = self._draw()
        slot = Slot(inputs=[v.clone() if isinstance(v, torch.Tensor) else v for v in inputs], pristine=inputs,
                    grad_outputs=None if grads is None else [g.clone() for g in grads], grad_pristine=grads)
        return slot

    def refresh(self) -> None:
        """Fresh values in every slot (same memory, so the child's mappings stay valid), and their
        float64 references, computed now, before the round: the device then does the judge's
        heaviest work right before the timed calls, as a loop of back-to-back calls keeps it busy
        (a power-capped kernel's clock follows how busy the device has just been)."""
        with torch.no_grad():
            for slot in self.slots:
                inputs, grads = self._draw_fitting(slot)
                for live, value in zip(slot.inputs, inputs):
                    if isinstance(live, torch.Tensor):
                        live.requires_grad_(False)
                        live.copy_(value)
                slot.pristine, slot.truth = inputs, None
                if grads is not None:
                    for live, value in zip(slot.grad_outputs, grads):
                        live.copy_(value)
                    slot.grad_pristine = grads
        for slot in self.slots:
            slot.truth = self._truth(slot)
        if self.device == "cuda":
            torch.cuda.synchronize()  # the child reads the slots on its own stream

    def add(self, count: int) -> None:
        """More slots (a graph-timed row replays one call per slot)."""
        self.slots += [self._new_slot() for _ in range(count)]

    def as_cases(self) -> list[Case]:
        """The slots as cases, for the judge's own timing of the baselines on the same memory."""
        cases = []
        for slot in self.slots:
            case = copy.copy(self.case)
            case.inputs, case.pristine = slot.inputs, slot.pristine
            case.grad_outputs = slot.grad_outputs
            cases.append(case)
        return cases

    def messages(self) -> list[dict[str, Any]]:
        return [slot.message() for slot in self.slots]

    # ------------------------------------------------------------------------------------ checks

    def check(self, results: list[dict[str, Any]], where: str) -> list[CallOutcome]:
        """Judge every call of a round: ``results[j]`` is what the child copied after call j.

        Each call is judged as a checked call is (``checking``): the output contract, unwritten
        (poisoned) memory, every output, updated input and gradient against its float64 reference,
        and the judge's memory (inputs outside ``mutates``, the grad_outputs) left as it was."""
        if len(results) != len(self.slots):
            check = ConfigCheck(config=where, dtype=self.case.dtype, max_abs_err=None, max_rel_err=None,
                                tolerance=None, passed=False,
                                note=f"the round returned {len(results)} results for {len(self.slots)} calls")
            return [CallOutcome(check)]
        outcomes: list[CallOutcome] = []
        screens = [self._screen(slot, result) for slot, result in zip(self.slots, results)]
        flags = [s for s in screens if s is not None]
        bad = torch.stack(flags).tolist() if flags else []  # one synchronisation for the whole round
        for j, (slot, result, screen) in enumerate(zip(self.slots, results, screens)):
            if screen is not None and not bad.pop(0):
                outcomes.append(CallOutcome(ConfigCheck(config=where, dtype=self.case.dtype, max_abs_err=None,
                                                        max_rel_err=None, tolerance=None)))
            else:  # anything off, or not screenable: the full judgement, with its reasons
                outcomes.append(self._check_one(slot, result, f"{where} [timed call {j + 1} of a round]"))
        return outcomes

    def _screen(self, slot: Slot, result: dict[str, Any]) -> torch.Tensor | None:
        """A device-side flag that is false when the call is certainly right, with no synchronisation:
        the float64 references of the slot, each allclose output's max error against its tolerance,
        the judge's memory bitwise; None when the call needs the full judgement (an output of another
        comparator, a non-finite reference, a shape or dtype off). Passing calls are most calls: the
        full judgement per call (several synchronising reductions each) made an RMSNorm evaluation's
        1,300 timed calls cost 6 s."""
        if slot.truth is None:
            slot.truth = self._truth(slot)
        refs, ref_grads = slot.truth
        outputs = list(result.get("outputs") or []) + list(result.get("mutated") or [])
        if len(outputs) != len(refs):
            return None
        flags = []
        for i, (out, ref) in enumerate(zip(outputs, refs)):
            spec = self.case.problem.task.output_spec(i) if i < self.case.n_outputs else OutputSpec()
            if type(out) is not torch.Tensor or out.shape != ref.shape or spec.compare is not Comparator.ALLCLOSE \
                    or not ref.is_floating_point() or (i < self.case.n_outputs and out.dtype != self.case.expected_outputs[i].dtype):
                return None
            flags.append(_beyond(out, ref, TIMED_SLACK * self.case.tolerances[i]))
        for i, (live, value) in enumerate(zip(slot.inputs, slot.pristine)):
            if i not in self.mutated and isinstance(live, torch.Tensor):
                flags.append(_differs(live, value))
        for live, value in zip(slot.grad_outputs or [], slot.grad_pristine or []):
            flags.append(_differs(live, value))
        if self.backward:
            grads = result.get("grads") or {}
            got = {f"input:{self.case.names[i]}": g for i, g in zip(self.wrt, grads.get("inputs") or [])}
            got.update({f"param:{n}": g for n, g in (grads.get("params") or {}).items()})
            for name, ref in ref_grads.items():
                mine = got.get(name)
                if type(mine) is not torch.Tensor or mine.shape != ref.shape:
                    return None
                flags.append(_beyond(mine, ref, TIMED_SLACK * self.case.grad_tolerances[name]))
        return torch.stack(flags).any() if flags else torch.zeros((), dtype=torch.bool, device=self.device)

    def _check_one(self, slot: Slot, result: dict[str, Any], where: str) -> CallOutcome:
        truth = copy.copy(self.case)
        truth.inputs, truth.pristine = slot.inputs, slot.pristine
        truth.ref_outputs, truth.ref_grads = slot.truth if slot.truth is not None else self._truth(slot)
        truth.tolerances = [t * TIMED_SLACK for t in self.case.tolerances]
        truth.grad_tolerances = {k: t * TIMED_SLACK for k, t in (self.case.grad_tolerances or {}).items()}
        violations = input_mutation(truth, slot.inputs, where)
        if any(not bitwise_equal(live, value) for live, value in zip(slot.grad_outputs or [], slot.grad_pristine or [])):
            violations.append(Violation(ViolationKind.INPUT_MUTATION,
                                        f"{where}: the grad_output handed to backward was modified"))
        outputs = list(result.get("outputs") or [])
        types = [type(o).__module__ + "." + type(o).__qualname__ for o in outputs]
        contract = output_contract(truth, outputs, types, where)
        if contract:
            check = ConfigCheck(config=where, dtype=truth.dtype, max_abs_err=None, max_rel_err=None,
                                tolerance=None, passed=False, note=contract[0].detail)
            return CallOutcome(check, violations + contract, outputs)
        check, poison = compare_all(truth, outputs + list(result.get("mutated") or []), where)
        if self.backward and check.passed:
            check = compare_grads(truth, result.get("grads"), where, check)
        return CallOutcome(check, violations + poison, outputs)

    def _truth(self, slot: Slot) -> tuple[list[torch.Tensor], dict[str, torch.Tensor]]:
        """The float64 reference outputs (and gradients) of the values ``slot`` received this round."""
        model = self._reference_model()
        fallback = self.case.float64_fallback
        wide = torch.float32 if fallback else torch.float64
        args = [v.detach().to(wide).clone() if isinstance(v, torch.Tensor) and v.is_floating_point()
                else (v.clone() if isinstance(v, torch.Tensor) else v) for v in slot.pristine]
        leaves = []
        if self.backward:
            for j in self.wrt:
                args[j] = args[j].requires_grad_(True)
                leaves.append(args[j])
        with torch.set_grad_enabled(self.backward):
            outs = flatten_outputs(model(*args))
        grads: dict[str, torch.Tensor] = {}
        if self.backward:
            params = [p for _, p in self._grad_params(model)]
            differentiable = [(o, g) for o, g in zip(outs, slot.grad_pristine) if o.requires_grad]
            got = torch.autograd.grad([o for o, _ in differentiable], leaves + params,
                                      [g.to(o.dtype) for o, g in differentiable], allow_unused=True)
            grads = {n: g.detach().to(torch.float64) for n, g in zip(self.grad_names, got) if g is not None}
        values = [o.detach() for o in outs] + [args[j].detach() for j in self.mutated]
        return [v.to(torch.float64) if v.is_floating_point() else v for v in values], grads

    def _reference_model(self) -> torch.nn.Module:
        if self._model64 is None:
            wide = torch.float32 if self.case.float64_fallback else torch.float64
            self._model64 = copy.deepcopy(self.case.eager_model).to(wide)
        return self._model64

    @staticmethod
    def _grad_params(model: torch.nn.Module) -> list[tuple[str, torch.nn.Parameter]]:
        return [(n, p) for n, p in model.named_parameters() if p.requires_grad]

    def _grad_names(self) -> list[str]:
        names = [f"input:{self.case.names[i]}" for i in self.case.grad_input_indices()]
        return names + [f"param:{n}" for n, _ in self._grad_params(self.case.eager_model)]


def _beyond(out: torch.Tensor, ref: torch.Tensor, tolerance: float) -> torch.Tensor:
    """On the device: whether ``max|out - ref| / rms(ref)`` exceeds ``tolerance`` (or is not a number,
    or the reference is not finite: the full judgement decides those). As ``tolerance.normalised_error``
    measures it for finite references, ``CHUNK`` elements at a time (no float64 copy of a whole
    output), with nothing read back."""
    zero = ref.new_zeros((), dtype=torch.float64)
    if not ref.numel():
        return ~(zero <= tolerance * _TINY)
    out = out.detach()
    if out.shape != ref.shape:
        out, ref = torch.broadcast_tensors(out, ref)
    out, ref = out.reshape(-1), ref.reshape(-1)
    diff, scale, total = zero, zero, zero
    for start in range(0, ref.numel(), CHUNK):
        part = ref[start:start + CHUNK]
        diff = torch.maximum(diff, (out[start:start + CHUNK].to(torch.float64) - part).abs().amax())
        scale = torch.maximum(scale, part.abs().amax())
    safe = torch.where(scale > 0, scale, torch.ones_like(scale))
    for start in range(0, ref.numel(), CHUNK):
        total = total + (ref[start:start + CHUNK] / safe).pow(2).sum()
    rms = scale * (total / ref.numel()).sqrt()
    within = diff <= tolerance * torch.clamp(rms, min=_TINY)
    return ~(within & torch.isfinite(scale))


def _differs(live: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """On the device: whether ``live`` is not bitwise ``value`` (shape or dtype off counts as changed)."""
    if live.shape != value.shape or live.dtype != value.dtype:
        return torch.ones((), dtype=torch.bool, device=value.device)
    if live.numel() == 0:
        return torch.zeros((), dtype=torch.bool, device=value.device)
    if live.is_floating_point():
        return (as_bits(live.detach()) != as_bits(value)).any()
    return (live.detach() != value).any()
