"""The task model: typed, validated records that the rest of kernellab trusts.

A task is validated once, at load time (``kernellab.tasks.load``); everything above this layer
receives a frozen ``Task`` and never re-checks its fields.
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class TaskError(ValueError):
    """A task that cannot be used; the message is one line that says what is wrong and where."""


class Visibility(str, enum.Enum):
    SEEN = "seen"  # shown to agents, checked and timed
    EDGE = "edge"  # shown to agents, checked, not timed
    HOLDOUT = "holdout"  # never shown to an agent, scored separately
    SMALL = "small"  # CPU interpreter and smoke tests


class Policy(str, enum.Enum):
    STRICT = "strict"
    KERNELBENCH = "kernelbench"
    OFF = "off"


class Comparator(str, enum.Enum):
    ALLCLOSE = "allclose"
    EXACT = "exact"
    ULP = "ulp"
    VALUES_AT_INDICES = "values_at_indices"
    FIXED = "fixed"  # the thresholds a suite declares (atol/rtol, cosine, L1, RMSE), not eager-scaled


class InputDomain(str, enum.Enum):
    """What values an input may take; adversarial inputs of the stability stage stay inside it."""

    REAL = "real"
    POSITIVE = "positive"
    UNIT = "unit"  # in [0, 1]
    PROBABILITY = "probability"  # non-negative, sums to one over the last dimension
    INDEX = "index"  # integer indices: never perturbed
    POSITIVE_DEFINITE = "positive_definite"  # symmetric positive-definite matrices over the last two dims


DTYPES = ("float32", "bfloat16", "float16", "float64")
THROUGH_MAPS = ("softmax",)  # softmax: float32, along the comparator's dim
FIXED_METRICS = ("atol", "rtol", "cosine", "l1", "rmse")


@dataclass(frozen=True)
class FixedThresholds:
    """A suite's own pass criteria for ``compare = "fixed"``, per dtype where the suite varies them.

    ``atol``/``rtol``: every element within ``atol + rtol * |ref|`` (``torch.allclose``); ``cosine``:
    cosine similarity of the flattened outputs at least this; ``l1``: ``sum|out - ref| / sum|ref|`` at
    most this; ``rmse``: root mean square error at most this. Unset criteria are not checked.
    """

    values: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = ()  # metric -> ((dtype | "*", value), ...)

    def for_dtype(self, dtype: str) -> dict[str, float]:
        out = {}
        for metric, per_dtype in self.values:
            table = dict(per_dtype)
            if dtype in table or "*" in table:
                out[metric] = table.get(dtype, table.get("*"))
        return out


@dataclass(frozen=True)
class OutputSpec:
    """How one output is compared with the float64 reference.

    ``values_at_indices`` is for index outputs with ties (argmax, top-k): the candidate's indices are
    looked up in input ``of`` along ``dim`` and the values found are compared, not the indices.
    ``through`` names a map applied to ``of`` first, when the op ranks a function of the input whose
    ties the input itself does not show: an MoE router ranks float32 softmax probabilities, and
    logits 1e4 apart are both probability 0 there, so either expert is a correct pick.
    """

    compare: Comparator = Comparator.ALLCLOSE
    ulp: int = 0
    of: str | None = None
    dim: int = -1
    through: str | None = None  # one of THROUGH_MAPS
    # compare = "fixed" only; out of the repr so that the digests of tasks without it stay as they were
    fixed: FixedThresholds | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Config:
    """Values for a task's module-level constants, with the visibility class they belong to."""

    values: tuple[tuple[str, Any], ...]
    visibility: Visibility

    @classmethod
    def of(cls, values: dict[str, Any], visibility: Visibility) -> Config:
        return cls(tuple(values.items()), visibility)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.values)

    @property
    def label(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.values) or "default"

    def __hash__(self) -> int:
        # TOML arrays load as lists, which do not hash; configs are dictionary keys of the session's
        # case cache (a GPU MODE problem's list-valued parameter crashed it)
        return hash((repr(self.values), self.visibility))


@dataclass(frozen=True)
class Task:
    id: str
    root: Path
    source: str  # reference.py text
    category: str = "uncategorized"
    description: str = ""
    baseline_source: str | None = None
    baseline_language: str | None = None  # tasks.language.KernelLanguage value, None without a baseline
    dtypes: tuple[str, ...] = ("float32",)
    keep_dtype: tuple[str, ...] = ()
    fp32_precision: str = "ieee"
    backward: bool = False
    grad_inputs: tuple[str, ...] = ()
    mutates: tuple[str, ...] = ()
    policy: Policy = Policy.STRICT
    outputs: tuple[OutputSpec, ...] = (OutputSpec(),)
    tolerance_factor: float = 8.0
    bytes_formula: str | None = None
    flops_formula: str | None = None
    input_domain: tuple[tuple[str, InputDomain], ...] = ()
    configs: tuple[Config, ...] = field(default_factory=tuple)
    kernelbench: bool = False  # a bare KernelBench file: one config, its own constants
    # Parameters and buffers (full dotted or last name) whose own initialisation is kept: a suite that
    # initialises a weight to a constant on purpose (ones, zeros) is measured with that constant.
    keep_init: tuple[str, ...] = ()

    def configs_of(self, *visibility: Visibility) -> list[Config]:
        return [c for c in self.configs if c.visibility in visibility]

    def output_spec(self, index: int) -> OutputSpec:
        """The spec for output ``index``; the last spec covers any further outputs."""
        return self.outputs[min(index, len(self.outputs) - 1)]

    def domain_of(self, name: str) -> InputDomain:
        return dict(self.input_domain).get(name, InputDomain.REAL)

    @property
    def sha256(self) -> str:
        digest = hashlib.sha256(self.source.encode())
        digest.update((self.baseline_source or "").encode())
        digest.update(repr(self._hashed_fields()).encode())
        return digest.hexdigest()

    def _hashed_fields(self) -> tuple:
        return (self.dtypes, self.keep_dtype, self.fp32_precision, self.backward, self.grad_inputs,
                self.mutates, self.policy.value, self.outputs, self.tolerance_factor,
                self.bytes_formula, self.flops_formula, self.input_domain, self.configs) + \
            ((self.keep_init,) if self.keep_init else ()) + \
            tuple(o.fixed for o in self.outputs if o.fixed is not None)
