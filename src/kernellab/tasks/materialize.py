"""Turning a task at one config into tensors and modules: init arguments, inputs, shared weights.

Used by the judge (reference in float64, baselines) and by the candidate child (the candidate's own
module), so both sides build their parameters the same way from the same seed.
"""

from __future__ import annotations

import inspect
import logging
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kernellab.tasks.model import Config, InputDomain, Task, TaskError, Visibility
from kernellab.tasks.module import build_module

# Inputs of these dtypes follow the run's dtype; others (integers, float8 payloads) keep their own.
CASTABLE = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16,
                "float64": torch.float64}


@dataclass
class Problem:
    """One task at one config: the re-executed reference module and what it exposes."""

    task: Task
    config: Config
    module: types.ModuleType
    # Element counts, traced once: the module (and so every size) is fixed for the problem's life.
    _counted: dict[str, int | None] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def input_names(self) -> list[str]:
        return forward_input_names(self.module)

    def init_inputs(self) -> list[Any]:
        return module_init_inputs(self.module)

    def input_numel(self) -> int:
        """Total elements of the inputs and weights, found without allocating them (meta device, then fake
        tensors); a ``get_inputs`` neither can trace counts as unboundedly large, except at the
        ``small`` config, which is run for real."""
        if "inputs" not in self._counted:
            self._counted["inputs"] = self._input_numel()
        return self._counted["inputs"]  # type: ignore[return-value]

    def _input_numel(self) -> int:
        state = torch.random.get_rng_state()
        try:
            seed_torch(0)
            raw = _trace_inputs(self.module.get_inputs, small=self.config.visibility is Visibility.SMALL)
        finally:
            torch.random.set_rng_state(state)
        if raw is None:
            return sys.maxsize
        return sum(v.numel() for v in raw if isinstance(v, torch.Tensor)) + self._state_numel()

    def _state_numel(self) -> int:
        """Elements of the model's parameters and buffers (an embedding table dwarfs its index input)."""
        try:
            with torch.device("meta"):
                model = self.module.Model(*self.init_inputs())
        except Exception:  # noqa: BLE001 - a constructor meta cannot run: count nothing rather than fail
            return 0
        return sum(t.numel() for t in list(model.parameters()) + list(model.buffers()))

    def output_numel(self) -> int:
        """Elements of the forward's outputs, from a run on the meta device (then under fake tensors),
        which allocates nothing: a matmul of two 4096² inputs makes a 4096² output, a size guard that
        counted inputs only would let through an outer product of two vectors. 0 when neither can
        trace the forward (data-dependent shapes): the inputs and weights are then all that is counted."""
        return self.traced_output_numel() or 0

    def traced_output_numel(self) -> int | None:
        """``output_numel``, or None when the forward cannot be traced at this config."""
        if "outputs" not in self._counted:
            self._counted["outputs"] = self._traced_output_numel()
        return self._counted["outputs"]

    def _traced_output_numel(self) -> int | None:
        state = torch.random.get_rng_state()
        try:
            seed_torch(0)
            outputs = _trace_outputs(self.module)
        finally:
            torch.random.set_rng_state(state)
        return None if outputs is None else sum(v.numel() for v in outputs if isinstance(v, torch.Tensor))

    def footprint_numel(self) -> int:
        """Inputs, weights and outputs together: what the size guards compare with a machine's limit."""
        inputs = self.input_numel()
        return inputs if inputs == sys.maxsize else inputs + self.output_numel()

    def inputs(self, seed: int, device: str | torch.device, dtype: str) -> list[Any]:
        """Fresh inputs from the reference's ``get_inputs`` under ``seed``, floating ones cast to ``dtype``."""
        return module_inputs(self.module, seed, device, dtype, self.task.keep_dtype)


def forward_input_names(module: types.ModuleType) -> list[str]:
    """The names of the reference ``Model.forward``'s inputs, in order."""
    return list(inspect.signature(module.Model.forward).parameters)[1:]  # drop self


def module_init_inputs(module: types.ModuleType) -> list[Any]:
    """The reference module's ``get_init_inputs()``, drawn under seed 0 (random ones are the same every time)."""
    state = torch.random.get_rng_state()
    try:
        seed_torch(0)
        return list(module.get_init_inputs())
    finally:
        torch.random.set_rng_state(state)


def module_inputs(module: types.ModuleType, seed: int, device: str | torch.device, dtype: str,
                  keep_dtype: tuple[str, ...] | list[str]) -> list[Any]:
    """The reference module's ``get_inputs()`` under ``seed``, made on ``device``, floating ones cast to
    ``dtype`` except the inputs named in ``keep_dtype``."""
    generator_state = torch.random.get_rng_state()
    try:
        seed_torch(seed)
        with torch.device(device):
            raw = list(module.get_inputs())
    finally:
        torch.random.set_rng_state(generator_state)
    names = forward_input_names(module)
    out = []
    for i, value in enumerate(raw):
        name = names[i] if i < len(names) else f"arg{i}"
        if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
            raise TaskError(f"get_inputs: input {name!r} is a {type(value).__name__} of tensors; pass each "
                            f"tensor as its own forward argument (the judge restores and checks top-level "
                            f"tensors only)")
        out.append(_cast(value, dtype, name in keep_dtype, device))
    return out


def _trace_inputs(get_inputs, small: bool) -> list[Any] | None:
    try:
        with torch.device("meta"):
            return list(get_inputs())
    except Exception:  # noqa: BLE001 - get_inputs does something the meta device cannot
        pass
    try:
        from torch._subclasses.fake_tensor import FakeTensorMode

        with FakeTensorMode():
            return list(get_inputs())
    except Exception:  # noqa: BLE001
        pass
    return list(get_inputs()) if small else None


def _trace_outputs(module: types.ModuleType) -> list[Any] | None:
    """The forward's outputs on the meta device, else under fake tensors; None when neither runs it.
    Not bounded in time: a deadline would make what is traceable (and so a KernelBench file's derived
    config, part of its task hash) depend on the machine's load. An RNN on the meta device runs its
    cell once per time step (a 6-layer LSTM over 512 steps: about a minute on a loaded 2-core machine)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    # Fake tensors log the error of an op that cannot run before raising it: here that is an answer
    # (untraceable), not something to show.
    fake_log = logging.getLogger("torch._subclasses.fake_tensor")
    level = fake_log.level
    fake_log.setLevel(logging.CRITICAL)
    try:
        for context in (lambda: torch.device("meta"), FakeTensorMode):
            try:
                with context(), torch.no_grad():
                    model = module.Model(*module_init_inputs(module))
                    return flatten_outputs(model(*module.get_inputs()))
            except Exception:  # noqa: BLE001 - an op without a meta or fake implementation
                continue
        return None
    finally:
        fake_log.setLevel(level)


def reference_file(task: Task) -> Path:
    """Where the task's reference module lives (named in the errors and tracebacks of its code)."""
    return task.root / "reference.py" if not task.kernelbench else task.root / f"{task.id}.py"


def load_problem(task: Task, config: Config) -> Problem:
    where = reference_file(task)
    try:
        module = build_module(task.source, config.as_dict(), name="reference", where=where)
    except TaskError:
        raise
    except Exception as exc:  # the reference itself failed to execute: the task is unusable
        raise TaskError(f"{task.id} [{config.label}]: {where.name} failed to execute: "
                        f"{type(exc).__name__}: {exc}") from None
    return Problem(task, config, module)


def _cast(value: Any, dtype: str, keep: bool, device: str | torch.device) -> Any:
    if not isinstance(value, torch.Tensor):
        return value
    value = value.to(device)
    if value.dtype in CASTABLE and not keep:
        value = value.to(TORCH_DTYPES[dtype])
    return value.contiguous() if not value.is_contiguous() else value


def seed_torch(seed: int) -> None:
    """Seed the CPU generator and, once CUDA is up, the current GPU's.

    ``torch.manual_seed`` also queues a callback with a captured stack trace for every device type
    not yet initialised (XPU, MTIA), on every call: a millisecond each and a list that only grows,
    over the thousands of seeded builds of one session.
    """
    torch.random.default_generator.manual_seed(seed)
    if torch.cuda.is_initialized():
        torch.cuda.manual_seed(seed)


def device_generator(device: str | torch.device, seed: int) -> torch.Generator:
    """A generator on ``device``: random tensors of hundreds of MB are drawn where they are used,
    not on the CPU and copied (which took most of an evaluation's time on a GPU)."""
    return torch.Generator(device=torch.device(device)).manual_seed(seed)


def randomize_parameters(model: torch.nn.Module, seed: int, keep: tuple[str, ...] | list[str] = ()) -> None:
    """Replace constant-initialised floating parameters and buffers by random values near them.

    Default initialisations such as ``weight = ones`` or ``bias = zeros`` would let a kernel that
    ignores the weight pass; non-constant initialisations are already random and are kept.
    Values stay within ±50% of the constant (at least ±0.5), so variances stay positive.
    ``keep`` (a task's ``keep_init``) names parameters whose constant initialisation is the point
    (a suite measuring LayerNorm with its standard ones and zeros): full dotted names or last parts.
    """
    generator = torch.Generator(device="cpu").manual_seed(seed + 7919)
    buffers = {id(b) for b in model.buffers()}
    with torch.no_grad():
        for name, tensor in _named_state(model):
            if not tensor.is_floating_point() or tensor.numel() == 0:
                continue
            if name in keep or name.split(".")[-1] in keep:
                continue
            if id(tensor) in buffers and tensor.numel() == 1:
                continue  # a scalar buffer is a constant of the op (a scale, an eps), not a weight
            flat = tensor.detach().reshape(-1)
            if bool((flat == flat[0]).all()):
                centre = float(flat[0])
                scale = max(abs(centre), 1.0) * 0.5
                noise = (torch.rand(tensor.shape, generator=generator, dtype=torch.float64, device="cpu") * 2 - 1)
                tensor.copy_((centre + noise * scale).to(device=tensor.device, dtype=tensor.dtype))


def _named_state(model: torch.nn.Module):
    yield from model.named_parameters()
    yield from model.named_buffers()


def build_model(model_cls: type, init_inputs: list[Any], seed: int,
                keep_init: tuple[str, ...] | list[str] = ()) -> torch.nn.Module:
    """Instantiate under ``seed`` (identical seeding for reference and candidate), then randomize
    every constant-initialised weight except those named in ``keep_init``."""
    seed_torch(seed)
    model = model_cls(*init_inputs)
    randomize_parameters(model, seed, keep_init)
    return model


def cast_model(model: torch.nn.Module, dtype: str, keep_dtype: tuple[str, ...] | list[str],
               device: str | torch.device) -> torch.nn.Module:
    """Move to ``device`` and cast floating parameters and buffers to ``dtype``, except those named
    (by their last name component) in ``keep_dtype``."""
    model = model.to(device)
    target = TORCH_DTYPES[dtype]
    with torch.no_grad():
        for name, tensor in _named_state(model):
            if tensor.dtype in CASTABLE and name.split(".")[-1] not in keep_dtype:
                tensor.data = tensor.data.to(target)
    return model


def flatten_outputs(out: Any) -> list[Any]:
    """A forward's result as a flat list (nested tuples and lists unrolled, ``None`` dropped).

    A Python number (a reference ending in ``.item()``) becomes a 0-d tensor: float64 for a float,
    int64 for an int, bool for a bool, the same whatever the run's dtype, so a candidate returns it as
    such a tensor. Before, a float output crashed the judge where it asked ``is_floating_point()``."""
    if isinstance(out, (tuple, list)):
        return [x for item in out for x in flatten_outputs(item)]
    if isinstance(out, bool):
        return [torch.tensor(out, dtype=torch.bool)]
    if isinstance(out, int):
        return [torch.tensor(out, dtype=torch.int64)]
    if isinstance(out, float):
        return [torch.tensor(out, dtype=torch.float64)]
    return [] if out is None else [out]


def copy_matching_state(source: dict[str, torch.Tensor], model: torch.nn.Module) -> list[str]:
    """Copy entries of ``source`` into ``model`` where names and shapes match; returns the names copied."""
    copied = []
    own = dict(_named_state(model))
    with torch.no_grad():
        for name, tensor in own.items():
            theirs = source.get(name)
            if theirs is not None and theirs.shape == tensor.shape:
                tensor.copy_(theirs.to(tensor.dtype))
                copied.append(name)
    return copied


# Offsets of the shifted stability kinds, with a unit spread around them. Far enough that a softmax
# or log-sum-exp without the max subtraction overflows or underflows exp (e^88.7 is float32's
# largest), that a max or min whose masked lanes read 0 picks the padding, and that a variance
# computed as E[x^2] - E[x]^2 cancels: at 1000 +- 1 in float32, E[x^2] = 1e6 is held to ~0.06,
# against a variance of 1, while a two-pass or Welford variance stays within ~1e-4 of float64 (eager's
# own error on such rows is of that order, so the tolerance stays meaningful). float16 and bfloat16
# get 200: at 1000 their spacing is 0.5 and 4, and eager float16 overflows squaring 1000s (65504);
# at 200 (spacing 0.125 and 1) exp(-200) still underflows float32, so a softmax whose running max
# starts at 0 returns 0/0 on rows at -200 (at 100 it stayed within bfloat16's tolerance).
SHIFTS = {torch.float16: 200.0, torch.bfloat16: 200.0}
SHIFT = 1000.0
SHIFTED_KINDS = ("shifted_up", "shifted_down")


def perturb_inputs(problem: Problem, inputs: list[Any], variant: str, generator: torch.Generator) -> list[Any]:
    """The stability stage's adversarial inputs for ``variant``: a kind applied to every floating input
    not in ``mutates``, or ``kind:name`` for the one input ``name``.

    The shifted kinds are given one input at a time: shifting two inputs of a bilinear form (q and k
    of attention) by S scales the rounding of their products by S^2, and turns attention's softmax
    into an argmax whose near-ties sound kernels break differently from eager, which is no finding."""
    kind, _, only = variant.partition(":")
    out = []
    for name, value in zip(problem.input_names + [""] * len(inputs), inputs):
        if isinstance(value, torch.Tensor) and value.is_floating_point() and name not in problem.task.mutates \
                and (not only or name == only):
            value = perturb_for_domain(value, problem.task.domain_of(name), kind, generator)
        out.append(value)
    return out


def perturb_for_domain(x: torch.Tensor, domain: InputDomain, kind: str, generator: torch.Generator) -> torch.Tensor:
    """An adversarial variant of ``x`` of the given ``kind`` that stays inside ``domain``."""
    if domain is InputDomain.INDEX or x.dtype not in CASTABLE:
        return x
    if domain is InputDomain.POSITIVE_DEFINITE:
        return _positive_definite(x, kind, generator)
    shape, dev = x.shape, x.device
    base = torch.randn(shape, generator=generator, dtype=torch.float32, device=dev)
    if kind in SHIFTED_KINDS:
        return _shifted(base, domain, kind == "shifted_up", x.dtype).to(x.dtype)
    if kind == "large":
        y = base * 1e3 if x.dtype in (torch.float16,) else base * 1e4
    elif kind == "tiny":
        y = base * 1e-3
    elif kind == "mixed":
        scale = torch.exp(torch.randn(shape, generator=generator, device=dev) * 2.0)
        y = base * scale
    elif kind == "heavy_tailed":
        denom = torch.randn(shape, generator=generator, device=dev).abs().clamp_min(1e-3)
        y = (base / denom).clamp(-1e3, 1e3)  # ratio of normals: Cauchy-like tails
    elif kind == "constant_rows":
        y = base[..., :1].expand(shape).clone() if x.dim() > 0 else base
    elif kind == "positive_rows":
        y = base.abs()  # one-signed at an ordinary scale: a min whose masked lanes read 0 picks the padding
    else:
        raise ValueError(kind)
    if domain is InputDomain.POSITIVE:
        y = y.abs() + 1e-3
    elif domain is InputDomain.UNIT:
        y = torch.sigmoid(y)
    elif domain is InputDomain.PROBABILITY:
        y = torch.softmax(y.float().clamp(-30, 30), dim=-1)
    return y.to(x.dtype)


def _positive_definite(x: torch.Tensor, kind: str, generator: torch.Generator) -> torch.Tensor:
    """Symmetric positive-definite matrices ``A Aᵀ / n + δ I`` over the last two dimensions, scaled or
    conditioned as ``kind`` asks: large and tiny scale all eigenvalues, mixed spreads them over four
    decades per row and column, the shifted kinds push the smallest eigenvalue towards zero (δ = 1e-3)
    or raise every one (δ = 1e3). A cholesky or solve of a generic random matrix fails or is
    meaningless; these stay inside the op's domain."""
    if x.dim() < 2 or x.shape[-1] != x.shape[-2]:
        return x
    n = x.shape[-1]
    a = torch.randn(x.shape, generator=generator, dtype=torch.float64, device=x.device)
    if kind == "mixed":
        a = a * torch.exp(torch.randn(x.shape[:-1] + (1,), generator=generator, device=x.device,
                                      dtype=torch.float64) * 2.0)
    delta = {"shifted_down": 1e-3, "shifted_up": 1e3}.get(kind, 1.0)
    spd = a @ a.transpose(-1, -2) / n + delta * torch.eye(n, dtype=torch.float64, device=x.device)
    scale = {"large": 1e4, "tiny": 1e-3}.get(kind, 1.0)
    return (spd * scale).to(x.dtype)


def _shifted(base: torch.Tensor, domain: InputDomain, up: bool, dtype: torch.dtype) -> torch.Tensor:
    """Values pushed to one side of ``domain``: real inputs by +-S (one-signed rows far from zero);
    positive ones up by S, or down to just above zero (1e-3 e^N: two decades, e.g. an optimizer's
    second moment next to its eps); unit ones to within 1% of 1 or of 0; probability rows peaked
    on a few entries, or nearly flat."""
    if domain is InputDomain.REAL or (domain is InputDomain.POSITIVE and up):
        shift = SHIFTS.get(dtype, SHIFT)
        return base + shift if up else base - shift
    if domain is InputDomain.POSITIVE:
        return 1e-3 * torch.exp(base)
    if domain is InputDomain.UNIT:
        near_edge = 0.01 * torch.sigmoid(base)
        return 1.0 - near_edge if up else near_edge
    logits = base * 8.0 if up else base * 0.01
    return torch.softmax(logits.clamp(-30, 30), dim=-1)
