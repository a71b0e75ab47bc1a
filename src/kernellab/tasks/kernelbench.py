"""Bare KernelBench files as tasks: the one config a file defines, and a small one derived from it.

A KernelBench problem is one ``.py`` file whose module constants set its sizes (``batch_size = 16``,
``dim = 16384``); it ships no small config, and its own sizes are far beyond what the Triton
interpreter can run (none of levels 1-3 fits 65,536 elements). Every stage that needs a config the
machine can run (smoke, determinism, stability) then had none. The small config is derived here by
one rule, the same for every file:

- the *size constants* are the module's integer constants of at least ``MIN_SIZE`` (and such integers
  inside list or tuple constants): smaller integers are dimensions, kernel sizes, strides, paddings,
  group and head counts, which the op's semantics hang on;
- the largest of them is halved (integer division, not below a floor), again and again, until the
  problem's inputs, weights and outputs together are at most ``SMALL_ELEMENTS`` (counted on the meta
  device, nothing allocated): a batch of 128 and a dim of 16384 become 8 and 4096 before either goes
  further, so no dimension collapses while another stays large. Constants computed from them
  (``input_shape = (num_classes,)``) follow, because the module is re-executed with the new values;
- the result is taken when its reference really runs (float32, on the CPU); otherwise (a floor of 8
  leaves a 3D convolution above the limit, or breaks a relation such as channels divisible by
  groups) the same is tried with the next, lower floor in ``FLOORS``.

A size the model's own code reads as a module global (``self.hidden = torch.randn((batch_size,
hidden_size))`` in an ``__init__``) is never scaled: a candidate written after the file reads the
file's value, not the config's, so only what reaches the model through ``get_inputs`` and
``get_init_inputs`` can change.

A file already within ``SMALL_ELEMENTS`` needs none; a file whose weights are fixed in its code (a
VGG's 4096-wide classifier) may have no small config at all, and is then too large for a CPU.
"""

from __future__ import annotations

import dataclasses
import symtable
from typing import Any

import torch

from kernellab.tasks.model import Config, Task, TaskError, Visibility

MIN_SIZE = 16  # integer constants from here up are sizes; below, dims, kernel sizes, strides, group counts
# A scaled size stays at least this: 8 keeps a 3x3 kernel inside its input and a batch several rows;
# a 3D convolution's five dimensions need less to come within SMALL_ELEMENTS.
FLOORS = (8, 4, 2)
SMALL_ELEMENTS = 1 << 15  # inputs, weights and outputs of the derived config together, at most


def with_small_config(task: Task) -> Task:
    """``task`` (a bare KernelBench file, its one seen config) with a derived small config added where
    its own config is larger than ``SMALL_ELEMENTS`` and a smaller one runs."""
    from kernellab.tasks.materialize import load_problem

    (seen,) = task.configs
    if load_problem(task, seen).footprint_numel() <= SMALL_ELEMENTS:
        return task
    small = derive_small_config(task)
    if small is None:
        return task
    return dataclasses.replace(task, configs=(seen, Config.of(small, Visibility.SMALL)))


def derive_small_config(task: Task) -> dict[str, Any] | None:
    """The scaled size constants (only those that changed) of a config within ``SMALL_ELEMENTS`` whose
    reference runs, or None."""
    constants = task.configs[0].as_dict()
    fixed = read_by_the_model(task.source)
    sizes = [name for name, value in constants.items() if _largest(value) >= MIN_SIZE and name not in fixed]
    if not sizes:
        return None
    if _inputs_and_weights(task, {n: _at_floor(constants[n], min(FLOORS)) for n in sizes}) > SMALL_ELEMENTS:
        return None  # weights fixed in the code (a ResNet, a 2.7B-parameter model): no halving gets there
    for floor in FLOORS:
        values = _halve_until_small(task, constants, sizes, floor)
        if values is None:
            continue
        changed = {name: values[name] for name in sizes if values[name] != constants[name]}
        try:
            problem = _problem(task, changed)
            outputs = _run_outputs(problem)
        except TaskError:
            continue
        if outputs is not None and problem.input_numel() + outputs <= SMALL_ELEMENTS:
            return changed
    return None


def read_by_the_model(source: str) -> set[str]:
    """Module globals the file's classes and functions read, other than the input functions: the
    model's definition as the file fixes it (by the compiler's own scopes: a parameter or local of
    the same name is not the global)."""
    from kernellab.tasks.module import INPUT_FUNCTIONS

    try:
        top = symtable.symtable(source, "<reference>", "exec")
    except SyntaxError:
        return set()
    found: set[str] = set()
    pending = [t for t in top.get_children() if t.get_name() not in INPUT_FUNCTIONS]
    while pending:
        table = pending.pop()
        found.update(s.get_name() for s in table.get_symbols() if s.is_referenced() and s.is_global())
        pending.extend(table.get_children())
    return found


def _halve_until_small(task: Task, constants: dict[str, Any], sizes: list[str], floor: int) -> dict[str, Any] | None:
    """Halve the largest size constant (not below ``floor``) until the footprint is within
    ``SMALL_ELEMENTS``; None when no size can be halved further and it is still larger.

    A step halves the largest size together with the sizes equal to it (``batch_size`` and
    ``input_shape = (32768,)`` of a broadcast). Where the forward traces on the meta device at the
    file's own sizes, a step after which it no longer traces is replaced by halving every size at
    once (which keeps ratios such as a transposed convolution's output width equal to a LayerNorm's
    width), then by halving each of the tied sizes alone, and when all fail the largest sizes are
    kept as they are (a dilated kernel wider than the input); where the forward does not trace, the
    result is judged by a real run only."""
    lowest = _footprint(task, {**constants, **{n: _at_floor(constants[n], floor) for n in sizes}}, sizes)
    if lowest is not None and lowest > SMALL_ELEMENTS:
        return None  # weights fixed in the code (a 2.7B-parameter model): no halving gets there
    values = dict(constants)
    strict = _footprint(task, values, sizes) is not None
    frozen: set[str] = set()
    while True:
        # Untraceable (or too slow to trace): inputs and weights decide, the real run counts outputs.
        footprint = _footprint(task, values, sizes) if strict else _inputs_and_weights(task, values) or None
        if footprint is not None and footprint <= SMALL_ELEMENTS:
            return values
        above = [n for n in sizes if n not in frozen and _largest(values[n]) > floor]
        if not above:
            return None
        largest = max(_largest(values[n]) for n in above)
        tied = [n for n in above if _largest(values[n]) == largest]
        steps = [tied, above] + [[n] for n in tied if len(tied) > 1] if strict else [tied]
        for names in steps:
            trial = {**values, **{n: _halved(values[n], floor) for n in names}}
            if not strict or _footprint(task, trial, sizes) is not None:
                values = trial
                break
        else:
            frozen.update(tied)


def _footprint(task: Task, values: dict[str, Any], sizes: list[str]) -> int | None:
    """Inputs, weights and outputs at these sizes, or None when the reference fails there or its
    forward cannot be traced."""
    try:
        problem = _problem(task, {n: values[n] for n in sizes if values[n] != task.configs[0].as_dict()[n]})
        outputs = problem.traced_output_numel()
        return None if outputs is None else problem.input_numel() + outputs
    except TaskError:
        return None


def _inputs_and_weights(task: Task, values: dict[str, Any]) -> int:
    """Inputs and weights at these sizes (no forward run): a lower bound of the footprint; 0 when the
    reference fails there."""
    try:
        return _problem(task, values).input_numel()
    except TaskError:
        return 0


def _problem(task: Task, values: dict[str, Any]):
    """The problem at trial sizes. Built as a seen config: a small one's ``get_inputs`` is run for real
    when it cannot be traced, and these sizes are not yet known to be small."""
    from kernellab.tasks.materialize import load_problem

    return load_problem(task, Config.of(values, Visibility.SEEN))


def _largest(value: Any) -> int:
    """The largest integer in a constant (itself, or inside a list or tuple); 0 for anything else."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, (list, tuple)):
        return max((_largest(v) for v in value), default=0)
    return 0


def _at_floor(value: Any, floor: int) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, list, tuple)):
        return value
    if isinstance(value, int):
        return min(value, floor)
    return type(value)(_at_floor(v, floor) for v in value)


def _halved(value: Any, floor: int) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, list, tuple)):
        return value
    if isinstance(value, int):
        return max(value // 2, floor) if value > floor else value
    return type(value)(_halved(v, floor) for v in value)


def _run_outputs(problem) -> int | None:
    """The reference's forward at this config, for real, on the CPU in float32: the elements of its
    outputs, or None when it fails there."""
    from kernellab.tasks.materialize import build_model, flatten_outputs

    state = torch.random.get_rng_state()
    try:
        model = build_model(problem.module.Model, problem.init_inputs(), seed=0)
        with torch.no_grad():
            outputs = flatten_outputs(model(*problem.inputs(seed=0, device="cpu", dtype="float32")))
        return sum(o.numel() for o in outputs if isinstance(o, torch.Tensor))
    except Exception:  # noqa: BLE001 - the reference rejects these sizes: try the next candidate
        return None
    finally:
        torch.random.set_rng_state(state)
