"""The task validator: rejects tasks that cannot tell a right kernel from a wrong one.

A task whose output barely depends on its inputs or weights lets a kernel that skips work pass
(robust-kbench flagged 69 of 100 KernelBench level-2 tasks this way), so every task is checked, per
config that this machine can run, in float64:

- runs: the reference executes and gives finite outputs (non-finite elements by design, such as an
  overflow flag's inputs, are set aside but cannot be all there is);
- deterministic: two runs on the same inputs agree to float64 rounding (``RERUN_RTOL``): scans on
  the GPU (cumsum over a million elements) add in a different order from run to run, and a
  difference of 1e-12 cannot move a comparison made at float32 or bfloat16 tolerances;
- not near-constant: over ``SEEDS`` input seeds, the per-element spread of the output is at least
  ``MIN_SPREAD`` (1%) of its scale, where the scale is mean |output| but never less than
  ``ZERO_SCALE`` × the inputs' RMS (an output that is ~0 for every input is constant);
- sensitive: replacing any one input by its value under another seed, or re-drawing the weights,
  changes the output by at least ``MIN_SENSITIVITY`` (1e-3) relative to its norm (under at least one
  of four other seeds or re-draws: two draws of a relevant input can agree by chance — a mean loss
  whose targets moved between two equally likely logits — an irrelevant one never differs);
- holdout configs differ from seen and edge configs.

Spread and sensitivity are judged on the configs that define the task (seen and small). Edge and
holdout configs include boundaries where insensitivity is the right answer (attention over one key
ignores q and k), so there they must run, be finite and be deterministic, which one seed shows (in
float64 the largest holdouts hold tens of GB per seed).

Memory: in float64 a large config's inputs and outputs take tens of GB per seed (an AdamW step over a
7B-model layer and its embedding: 18 GB of inputs, 14 GB of outputs). Only seed 0's inputs are kept;
other seeds are drawn again when needed. Determinism compares whole outputs; spread and sensitivity
are statistics over output elements (a mean of spreads, a ratio of norms) and are computed on a fixed
random sample of ``SAMPLE`` elements where the output is larger.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from kernellab.evaluate.reference import PARAM_SEED
from kernellab.evaluate.tolerance import rms
from kernellab.tasks.materialize import Problem, build_model, device_generator, flatten_outputs, load_problem
from kernellab.tasks.model import Task, TaskError, Visibility

SEEDS = 5
MIN_SPREAD = 0.01
MIN_SENSITIVITY = 1e-3
ZERO_SCALE = 1e-6
RERUN_RTOL = 1e-10
SAMPLE = 1 << 24  # output elements spread and sensitivity are judged on, at most
KEEP_BYTES = 1 << 30  # the inputs of every seed are kept while they take less than this


@dataclass
class TaskValidation:
    task: str
    passed: bool = True
    checked_configs: list[str] = field(default_factory=list)
    skipped_configs: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # "<config>: <reason>"

    def fail(self, where: str, reason: str) -> None:
        self.passed = False
        self.failures.append(f"{where}: {reason}")

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "passed": self.passed, "checked_configs": self.checked_configs,
                "skipped_configs": self.skipped_configs, "failures": self.failures}


def _outputs(problem: Problem, model: torch.nn.Module, inputs: list[Any]) -> torch.Tensor:
    """All outputs (and mutated inputs) of one float64 call, flattened into one vector."""
    args = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
    with torch.no_grad():
        out = [t for t in flatten_outputs(model(*args)) if isinstance(t, torch.Tensor)]
    mutated = [args[i] for i, n in enumerate(problem.input_names) if n in problem.task.mutates]
    parts = [t.detach().reshape(-1).to(torch.float64) for t in out + mutated]
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.float64)


def _inputs64(problem: Problem, seed: int, device: str) -> list[Any]:
    return [x.to(torch.float64) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
            for x in problem.inputs(seed, device, "float64")]


class _Runs:
    """The float64 inputs of each seed: kept while all of them are small, else seed 0's only, the
    others drawn again when asked for (they are a function of the seed)."""

    def __init__(self, problem: Problem, device: str, count: int) -> None:
        self.problem, self.device, self.count = problem, device, count
        self.keep_all = problem.input_numel() * 8 * count <= KEEP_BYTES
        self._kept: dict[int, list[Any]] = {0: _inputs64(problem, 0, device)}

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, seed: int) -> list[Any]:
        inputs = self._kept.get(seed)
        if inputs is None:
            inputs = _inputs64(self.problem, seed, self.device)
            if self.keep_all:
                self._kept[seed] = inputs
        return inputs


def _sample(flat: torch.Tensor) -> torch.Tensor:
    """At most ``SAMPLE`` elements of an output vector, the same positions for every call."""
    if flat.numel() <= SAMPLE:
        return flat
    generator = device_generator(flat.device, 7)
    index = torch.randint(flat.numel(), (SAMPLE,), generator=generator, device=flat.device)
    return flat[index]


def _rms(values: list[Any]) -> float:
    """Over finite elements (an overflow check's inputs hold inf by design), scaled as
    ``tolerance.rms`` is: finite inputs above 1e154 would square to inf and read as near-constant."""
    finite = [x.detach().to(torch.float64).reshape(-1) for x in values
              if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel()]
    finite = [x[torch.isfinite(x)] for x in finite]
    finite = [x for x in finite if x.numel()]
    return rms(torch.cat(finite)) if finite else 1.0


def _relative_change(a: torch.Tensor, b: torch.Tensor) -> float:
    if a.shape != b.shape:
        return float("inf")
    both = torch.isfinite(a) & torch.isfinite(b)
    if bool((torch.isfinite(a) != torch.isfinite(b)).any()):
        return float("inf")
    a, b = a[both].to(torch.float64), b[both].to(torch.float64)
    scale = max(float(a.abs().max()), float(b.abs().max())) if a.numel() else 0.0
    if scale == 0.0:
        return 0.0
    a, b = a / scale, b / scale  # norms of values above 1e154 overflow in float64 unscaled
    return float((a - b).norm() / max(float(a.norm()), 1e-300))


def _another_value(first: torch.Tensor, second: torch.Tensor, generator: torch.Generator) -> torch.Tensor | None:
    """The input under another seed; for an input that does not change with the seed (a RoPE
    table, ALiBi slopes, a fixed scale), the same input with 1% noise; None for fixed integers."""
    if not torch.equal(first, second):
        return second
    if not first.is_floating_point():
        return None
    noise = torch.randn(first.shape, generator=generator, dtype=torch.float64, device=first.device)
    scale = max(float(first.abs().mean()), 1e-3)
    return first + (noise * 0.01 * scale).to(first.dtype)


def validate_config(problem: Problem, device: str, report: TaskValidation) -> None:
    where = problem.config.label
    defining = problem.config.visibility in (Visibility.SEEN, Visibility.SMALL)
    init = problem.init_inputs()
    model = build_model(problem.module.Model, init, PARAM_SEED, problem.task.keep_init).to(device).to(torch.float64)
    runs = _Runs(problem, device, SEEDS if defining else 1)
    first = _outputs(problem, model, runs[0])
    if first.numel() == 0:
        report.fail(where, "the reference returns no tensor")
        return
    again = _outputs(problem, model, runs[0])
    if not torch.equal(first, again):
        change = _relative_change(first, again)
        if change > RERUN_RTOL:
            report.fail(where, f"the reference is not deterministic (two runs on the same inputs differ by "
                               f"{change:.2g} relative)")
    del again
    finite_somewhere = []  # judged on whole outputs: a sample can miss the few finite elements

    def sampled(flat: torch.Tensor) -> torch.Tensor:
        finite_somewhere.append(flat.numel() == 0 or bool(torch.isfinite(flat).any()))
        return _sample(flat)

    outputs = [sampled(first)]
    del first
    outputs += [sampled(_outputs(problem, model, runs[seed])) for seed in range(1, len(runs))]
    if not all(finite_somewhere):
        report.fail(where, "the reference gives no finite output")
        return
    if not defining:
        return
    stacked = torch.stack(outputs)
    finite = torch.isfinite(stacked).all(dim=0)  # inf/NaN by design (overflow checks) are set aside
    stacked = stacked[:, finite]
    spread = float(stacked.std(dim=0).mean()) if stacked.shape[1] else 0.0
    scale = max(float(stacked.abs().mean()) if stacked.numel() else 0.0, ZERO_SCALE * _rms(runs[0]))
    if spread < MIN_SPREAD * scale:
        report.fail(where, f"near-constant output (spread over {SEEDS} seeds {spread:.3g} is under "
                           f"{MIN_SPREAD:.0%} of its scale {scale:.3g})")
    base = outputs[0]
    generator = device_generator(device, 99)
    for i, name in enumerate(problem.input_names[:len(runs[0])]):
        # Inputs in `mutates` may be write-only buffers (an optimizer's low-precision copy of the
        # master weights): what is written there is compared, what they held need not matter.
        if not isinstance(runs[0][i], torch.Tensor) or name in problem.task.mutates:
            continue
        change = _input_sensitivity(problem, model, runs, i, base, generator)
        if change is not None and change < MIN_SENSITIVITY:
            report.fail(where, f"output insensitive to input {name!r} (relative change {change:.2g})")
    if any(p.is_floating_point() for p in model.parameters()):
        change = _weight_sensitivity(problem, init, runs[0], base, device)
        if change < MIN_SENSITIVITY:
            report.fail(where, f"output insensitive to the weights (relative change {change:.2g} under "
                               f"{SEEDS - 1} re-draws)")


def _weight_sensitivity(problem: Problem, init: list[Any], inputs: list[Any], base: torch.Tensor,
                        device: str) -> float:
    """The largest relative change of the output when the weights are re-drawn (10% noise), over up to
    ``SEEDS - 1`` draws, stopping at the first that reaches ``MIN_SENSITIVITY``. As for inputs, one
    draw can leave a mean over many terms where it was (an LM-head loss: the noise moves some logits
    up and others down); weights that do not matter never move it."""
    change = 0.0
    for draw in range(1, SEEDS):
        other = build_model(problem.module.Model, init, PARAM_SEED, problem.task.keep_init).to(device).to(torch.float64)
        generator = device_generator(device, PARAM_SEED + draw)
        with torch.no_grad():
            for p in other.parameters():
                if p.is_floating_point():
                    noise = torch.randn(p.shape, generator=generator, dtype=torch.float64, device=p.device)
                    p.add_(noise * 0.1 * max(float(p.abs().mean()), 1e-3))
        change = max(change, _relative_change(base, _sample(_outputs(problem, other, inputs))))
        if change >= MIN_SENSITIVITY:
            break
    return change


def _input_sensitivity(problem: Problem, model: torch.nn.Module, runs: _Runs, i: int,
                       base: torch.Tensor, generator: torch.Generator) -> float | None:
    """The largest relative change of the output when input ``i`` takes its value under another seed
    (stopping at the first that reaches ``MIN_SENSITIVITY``); None for an input that cannot vary."""
    change = 0.0
    for seed in range(1, len(runs)):
        other = _another_value(runs[0][i], runs[seed][i], generator)
        if other is None:
            return None
        swapped = list(runs[0])
        swapped[i] = other
        change = max(change, _relative_change(base, _sample(_outputs(problem, model, swapped))))
        if change >= MIN_SENSITIVITY:
            break
    return change


def validate_task(task: Task, device: str, max_elements: int | None) -> TaskValidation:
    """Validate every config this device can run (``max_elements`` input elements at most)."""
    report = TaskValidation(task.id)
    seen = {c.values for c in task.configs_of(Visibility.SEEN, Visibility.EDGE)}
    for c in task.configs_of(Visibility.HOLDOUT):
        if c.values in seen:
            report.fail(c.label, "holdout config equals a seen or edge config")
    for config in task.configs:
        try:
            problem = load_problem(task, config)
            small = config.visibility is Visibility.SMALL  # made for the CPU: always checked
            if max_elements is not None and not small and problem.input_numel() > max_elements:
                report.skipped_configs.append(config.label)
                continue
            validate_config(problem, device, report)
            report.checked_configs.append(config.label)
        except TaskError as exc:
            report.fail(config.label, str(exc))
        except Exception as exc:  # noqa: BLE001 - the reference itself failed: that is the finding
            report.fail(config.label, f"the reference failed: {type(exc).__name__}: {str(exc)[:200]}")
    return report


def shard(items: list[Any], spec: str | None) -> list[Any]:
    """``i/n`` (1-based): every n-th item starting at the i-th, so shards stay balanced by category."""
    if not spec:
        return items
    try:
        index, count = (int(x) for x in spec.split("/"))
    except ValueError:
        raise TaskError(f"--shard must look like 2/4, not {spec!r}") from None
    if not 1 <= index <= count:
        raise TaskError(f"--shard {spec}: the index must be between 1 and {count}")
    return items[index - 1::count]
