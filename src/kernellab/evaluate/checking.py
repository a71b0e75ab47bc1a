"""One correctness call, judged: run the candidate on a case and compare everything it returned.

This is where most exploit classes are caught, because it sees the raw evidence of every call:
output types and shapes (output contract, deferred results), poison bit patterns (unwritten
outputs), the inputs after the call (mutation), the op log or GPU trace (policy, side streams),
and the error against float64 (correctness, precision downcasts).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from kernellab.evaluate.policy_evidence import request_violations
from kernellab.evaluate import handover
from kernellab.evaluate.reference import Case, add_precision_probes, ensure_gradients
from kernellab.evaluate.tolerance import compare_output, normalised_error
from kernellab.evaluate.verdict import ConfigCheck, Violation, ViolationKind
from kernellab.sandbox.candidate import CandidateError
from kernellab.sandbox.evidence import as_bits, has_poison
from kernellab.sandbox.requests import RunRequest
from kernellab.tasks.model import Comparator, OutputSpec

# The exception the child raises when a call returns anything but plain tensors (sandbox/plain.py).
OUTPUT_CONTRACT_ERROR = "OutputContractError"

# A float32 error counts as a precision downcast when it is within this factor of what eager
# PyTorch gets in a lower precision: far above float32 rounding, close to the lower format's.
PRECISION_MATCH_FACTOR = 4.0


@dataclass
class CallOutcome:
    check: ConfigCheck
    violations: list[Violation] = field(default_factory=list)
    outputs: list[torch.Tensor] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.check.passed and not self.violations


def poison_sizes(case: Case) -> list[tuple[int, str]]:
    """(elements, dtype) of each expected output: the blocks the child poisons before a call."""
    return [(o.numel(), str(o.dtype).removeprefix("torch.")) for o in case.expected_outputs]


def run_case(ctx, case: Case, *, profile: bool = False, backward: bool = False,
             label: str | None = None, same_buffers: bool = False) -> CallOutcome:
    """Restore the case's inputs, call the candidate once, and judge what came back.

    ``same_buffers``: the call must see its new values in the previous call's input memory (the
    judge's GPU tensors are shared, so on the GPU the caller arranges it; the CPU child does it).
    """
    case.restore_inputs()
    call: dict[str, Any] = {"inputs": case.inputs, "same_buffers": same_buffers}
    if backward:
        call["wrt"] = case.grad_input_indices()
        call["grad_outputs"] = case.grad_outputs
    where = label or case.problem.config.label
    try:
        value = ctx.child.ask(RunRequest(ctx.model_key(case), [call], poison_sizes(case), profile), ctx.timeout)
    except CandidateError as exc:
        if exc.exc_type != OUTPUT_CONTRACT_ERROR:
            raise
        check = ConfigCheck(config=where, dtype=case.dtype, max_abs_err=None, max_rel_err=None, tolerance=None,
                            passed=False, note=str(exc))
        return CallOutcome(check, [Violation(ViolationKind.OUTPUT_CONTRACT, f"{where}: {exc}")])
    result = value["results"][0]
    violations = _evidence_violations(ctx, value, where, case.inputs)
    outputs = [o.clone() if isinstance(o, torch.Tensor) and o.is_cuda else o for o in result["outputs"]]
    contract = output_contract(case, outputs, result["types"], where)
    violations += contract
    inputs_after = result["inputs_after"] if result["inputs_after"] is not None else case.inputs
    violations += input_mutation(case, inputs_after, where)
    violations += _handed_over_mutation(ctx, case, result, backward, where)
    check = ConfigCheck(config=where, dtype=case.dtype, max_abs_err=None, max_rel_err=None, tolerance=None)
    if contract:
        check.passed, check.note = False, contract[0].detail
        return CallOutcome(check, violations, outputs)
    mutated = [inputs_after[i] for i in case.mutated_indices()]
    compared = outputs + mutated
    check, poison = compare_all(case, compared, where)
    violations += poison
    if not check.passed and not poison:
        violations += _precision(case, compared, where)
    if backward and check.passed:
        if ensure_gradients(case):
            ctx.session.recount(case)  # the case holds its float64 gradients now
        check = compare_grads(case, result["grads"], where, check)
    return CallOutcome(check, violations, outputs)


def _evidence_violations(ctx, value: dict[str, Any], where: str, inputs: list[Any] | None = None) -> list[Violation]:
    """Threads left running, and the policy evidence of the call (``policy_evidence``)."""
    found: list[Violation] = []
    if value.get("threads", 0) > 0:
        found.append(Violation(ViolationKind.DEFERRED_RESULT,
                               f"{where}: the candidate left {value['threads']} extra thread(s) running"))
    return found + request_violations(ctx, value, where, inputs)


def output_contract(case: Case, outputs: list[Any], types: list[str], where: str) -> list[Violation]:
    expected = case.expected_outputs
    if len(outputs) != len(expected):
        return [Violation(ViolationKind.OUTPUT_CONTRACT,
                          f"{where}: returned {len(outputs)} output(s), the reference returns {len(expected)}")]
    problems = []
    for i, (out, exp, type_name) in enumerate(zip(outputs, expected, types)):
        if type_name != "torch.Tensor":
            problems.append(Violation(ViolationKind.DEFERRED_RESULT,
                                      f"{where}: output {i} is a {type_name}, not a plain torch.Tensor"))
        elif not isinstance(out, torch.Tensor):
            problems.append(Violation(ViolationKind.OUTPUT_CONTRACT, f"{where}: output {i} is not a tensor"))
        elif tuple(out.shape) != tuple(exp.shape):
            problems.append(Violation(ViolationKind.OUTPUT_CONTRACT,
                                      f"{where}: output {i} has shape {tuple(out.shape)}, expected {tuple(exp.shape)}"))
        elif out.dtype != exp.dtype:
            problems.append(Violation(ViolationKind.OUTPUT_CONTRACT,
                                      f"{where}: output {i} has dtype {out.dtype}, expected {exp.dtype}"))
    return problems


def _handed_over_mutation(ctx, case: Case, result: dict[str, Any], backward: bool, where: str) -> list[Violation]:
    """Judge memory handed over only to be read, compared with the judge's own after the call
    (``handover``): the grad_outputs of a backward call, and the init arguments and weights of the
    model the call ran on (after every call until the next instantiation: on the GPU the child has
    synchronised by then, so writes its ``__init__`` left queued have landed, and a write found
    after a call whose outcome the caller drops, the load stage's, is found again)."""
    found = []
    if backward and case.pristine_grad_outputs is not None:
        after = result.get("grad_outputs_after")
        changed = handover.first_change(after if after is not None else case.grad_outputs,
                                        case.pristine_grad_outputs, "grad_output")
        if changed:
            found.append(Violation(ViolationKind.INPUT_MUTATION, f"{where}: {changed} was modified in backward"))
    if ctx.handed_at_instantiate is not None:
        handed, own, config = ctx.handed_at_instantiate
        changed = handover.first_change(handed, own)
        if changed:
            found.append(Violation(ViolationKind.INPUT_MUTATION,
                                   f"{config}: the candidate modified {changed}, handed to it at instantiation"))
    return found


def input_mutation(case: Case, after: list[Any], where: str) -> list[Violation]:
    mutable = set(case.mutated_indices())
    for i, (now, before) in enumerate(zip(after, case.pristine)):
        if i in mutable or not isinstance(before, torch.Tensor):
            continue
        if not isinstance(now, torch.Tensor) or not bitwise_equal(now.detach(), before):
            name = case.names[i] if i < len(case.names) else f"#{i}"
            return [Violation(ViolationKind.INPUT_MUTATION, f"{where}: input {name!r} was modified")]
    return []


def bitwise_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    a = a.to(b.device)
    if a.is_floating_point():
        return bool(torch.equal(as_bits(a), as_bits(b)))
    return bool(torch.equal(a, b))


def compare_all(case: Case, compared: list[torch.Tensor], where: str) -> tuple[ConfigCheck, list[Violation]]:
    task = case.problem.task
    named = case.named_inputs()
    worst_abs, worst_rel, worst_tol = 0.0, 0.0, None
    failures, poison = [], []
    for i, (out, ref) in enumerate(zip(compared, case.ref_outputs)):
        spec = task.output_spec(i) if i < case.n_outputs else OutputSpec()  # mutated inputs: allclose
        if spec.compare is Comparator.FIXED and case.variant is not None:
            spec = OutputSpec()  # a suite's thresholds are for its own inputs: stability inputs use eager's
        if tuple(out.shape) != tuple(ref.shape):  # never broadcast: an emptied input compares as no error
            what = "output" if i < case.n_outputs else "updated input"
            failures.append(f"output {i}: {what} of shape {tuple(out.shape)}, expected {tuple(ref.shape)}")
            continue
        result = compare_output(out.to(ref.device), ref, spec, case.tolerances[i], inputs=named)
        if result.max_abs_err is not None:
            worst_abs = max(worst_abs, result.max_abs_err)
        if result.max_rel_err is not None and result.max_rel_err >= worst_rel:
            worst_rel, worst_tol = result.max_rel_err, result.tolerance
        if not result.passed:
            failures.append(f"output {i}: {result.problem}")
            if out.is_floating_point() and has_poison(out):
                poison.append(Violation(ViolationKind.ALLOCATOR_REUSE,
                                        f"{where}: output {i} holds memory the candidate never wrote "
                                        f"(unwritten output)"))
    check = ConfigCheck(config=where, dtype=case.dtype, max_abs_err=worst_abs, max_rel_err=worst_rel,
                        tolerance=worst_tol, passed=not failures, note="; ".join(failures) or None)
    return check, poison


def _precision(case: Case, compared: list[torch.Tensor], where: str) -> list[Violation]:
    if case.dtype != "float32":
        return []
    add_precision_probes(case)  # made on the first failure of this case, once
    if not case.lower_precision_errs:
        return []
    for i, (out, ref) in enumerate(zip(compared, case.ref_outputs)):
        if i >= len(case.lower_precision_errs) or not ref.is_floating_point():
            continue
        err = normalised_error(out.to(ref.device), ref)[1]
        if err <= case.tolerances[i]:
            continue
        for label, lower in sorted(case.lower_precision_errs[i].items(), key=lambda kv: kv[1]):
            if lower > case.tolerances[i] and err <= PRECISION_MATCH_FACTOR * lower:
                return [Violation(ViolationKind.PRECISION,
                                  f"{where}: output {i} has the error of {label} arithmetic ({err:.2e}, "
                                  f"{label} eager {lower:.2e}) in a float32 task")]
    return []


def compare_grads(case: Case, grads: dict[str, Any] | None, where: str, check: ConfigCheck) -> ConfigCheck:
    if grads is None:
        check.passed, check.note = False, "no gradients returned"
        return check
    got = {f"input:{case.names[i]}": g for i, g in zip(case.grad_input_indices(), grads["inputs"])}
    got.update({f"param:{n}": g for n, g in grads["params"].items()})
    for name, ref in (case.ref_grads or {}).items():
        mine = got.get(name)
        if mine is None:
            check.passed, check.note = False, f"no gradient for {name}"
            return check
        err = normalised_error(mine.to(ref.device), ref)[1]
        tol = case.grad_tolerances[name]
        check.max_rel_err = max(check.max_rel_err or 0.0, err)
        check.tolerance = tol
        if err > tol or tuple(mine.shape) != tuple(ref.shape):
            check.passed, check.note = False, f"gradient {name}: error {err:.2e} above {tol:.2e}"
            return check
    return check
