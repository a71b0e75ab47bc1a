"""``task.toml`` as a typed record: read with unknown keys forbidden, written with ``tomli-w``.

``TaskToml.parse`` is the one place a task file's keys and value types are checked (each field's
annotation is its type; a key no field names is refused with the keys that exist), so a typo such
as ``holdouts = [...]`` is an error instead of a task silently measured without its held-out
configs. The checks that need the reference (names of forward arguments, constants a config sets)
stay in ``tasks.load``. ``TaskToml.of(task)`` and ``to_toml()`` write a task back (an agent's
workspace holds one), and ``parse`` reads that text back to the same record.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernellab.tasks.model import OutputSpec, Task, TaskError, Visibility

SCHEMA_VERSION = 1
# TOML list key of each config visibility, in the order a file lists them.
CONFIG_LISTS = {"configs": Visibility.SEEN, "edge": Visibility.EDGE, "holdout": Visibility.HOLDOUT,
                "small": Visibility.SMALL}


@dataclass(frozen=True)
class OutputTable:
    """One ``[[outputs]]`` table: how one output of ``forward`` is compared."""

    compare: str = "allclose"
    ulp: int = 0
    of: str | None = None
    dim: int = -1
    through: str | None = None
    # compare = "fixed": a suite's own thresholds, each a number or a table keyed by dtype ("*": the rest)
    atol: float | dict[str, float] | None = None
    rtol: float | dict[str, float] | None = None
    cosine: float | dict[str, float] | None = None
    l1: float | dict[str, float] | None = None
    rmse: float | dict[str, float] | None = None


@dataclass(frozen=True)
class TaskToml:
    """The keys of a schema-1 ``task.toml``; every one but ``schema`` and ``category`` is optional."""

    schema: int
    category: str
    description: str = ""
    dtypes: list[str] | None = None
    keep_dtype: list[str] = field(default_factory=list)
    fp32_precision: str = "ieee"
    backward: bool = False
    grad_inputs: list[str] = field(default_factory=list)
    mutates: list[str] = field(default_factory=list)
    policy: str = "strict"
    outputs: list[OutputTable] = field(default_factory=lambda: [OutputTable()])
    tolerance_factor: float = 8.0
    bytes: str | None = None
    flops: str | None = None
    input_domain: dict[str, str] = field(default_factory=dict)
    configs: list[dict[str, Any]] = field(default_factory=list)
    edge: list[dict[str, Any]] = field(default_factory=list)
    holdout: list[dict[str, Any]] = field(default_factory=list)
    small: list[dict[str, Any]] = field(default_factory=list)
    keep_init: list[str] = field(default_factory=list)  # weights that keep their own initialisation

    @classmethod
    def parse(cls, data: dict[str, Any], where: Path | str) -> TaskToml:
        """The record ``data`` (what ``tomllib`` read from ``where``) describes; one ``TaskError`` line
        naming the file and the key otherwise."""
        values = _fields(cls, data, str(where), "")
        if values["schema"] != SCHEMA_VERSION:
            raise TaskError(f"{where}: schema {values['schema']} is not supported (this kernellab reads "
                            f"schema {SCHEMA_VERSION})")
        if "outputs" in values:
            values["outputs"] = [OutputTable(**_fields(OutputTable, item, str(where), f"outputs[{i}]"))
                                 for i, item in enumerate(values["outputs"])]
        return cls(**values)

    @classmethod
    def of(cls, task: Task) -> TaskToml:
        """The file that loads back as ``task`` (its configs of every visibility included)."""
        return cls(schema=SCHEMA_VERSION, category=task.category, description=task.description,
                   dtypes=list(task.dtypes), keep_dtype=list(task.keep_dtype), fp32_precision=task.fp32_precision,
                   backward=task.backward, grad_inputs=list(task.grad_inputs), mutates=list(task.mutates),
                   policy=task.policy.value, outputs=[_output_table(o) for o in task.outputs],
                   tolerance_factor=float(task.tolerance_factor), bytes=task.bytes_formula,
                   flops=task.flops_formula, input_domain={n: d.value for n, d in task.input_domain},
                   keep_init=list(task.keep_init),
                   **{key: [c.as_dict() for c in task.configs_of(v)] for key, v in CONFIG_LISTS.items()})

    def to_dict(self) -> dict[str, Any]:
        """The TOML document: None values left out (TOML has no null), empty config lists too."""
        d = dataclasses.asdict(self)
        d["outputs"] = [{k: v for k, v in o.items() if v is not None} for o in d["outputs"]]
        return {k: v for k, v in d.items() if v is not None and not ((k in CONFIG_LISTS or k == "keep_init") and not v)}

    def to_toml(self, header: str | None = None) -> str:
        import tomli_w  # only writers need it: reading a task stays on the standard library

        comment = "".join(f"# {line}\n" for line in header.splitlines()) if header else ""
        return comment + tomli_w.dumps(self.to_dict())


def _output_table(spec: OutputSpec) -> OutputTable:
    fixed = {metric: (dict(table)["*"] if [k for k, _ in table] == ["*"] else dict(table))
             for metric, table in (spec.fixed.values if spec.fixed is not None else ())}
    return OutputTable(compare=spec.compare.value, ulp=spec.ulp, of=spec.of, dim=spec.dim, through=spec.through,
                       **fixed)


def _fields(cls: type, data: Any, where: str, prefix: str) -> dict[str, Any]:
    """``data``'s keys checked against ``cls``'s fields: unknown keys refused, required ones present,
    each value of its field's annotated type."""
    label = f"{prefix}: " if prefix else ""
    if not isinstance(data, dict):
        raise TaskError(f"{where}: {prefix} must be a table")
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}
    for key in data:
        if key not in known:
            raise TaskError(f"{where}: {label}unknown key {key!r} (schema {SCHEMA_VERSION} keys: "
                            f"{', '.join(known)})")
    for name, f in known.items():
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if required and name not in data:
            raise TaskError(f"{where}: {label}missing required key {name!r}")
    for key, value in data.items():
        if not _is(value, hints[key]):
            dotted = f"{prefix}.{key}" if prefix else key
            raise TaskError(f"{where}: {dotted} has the wrong type ({type(value).__name__}; expected "
                            f"{_name(hints[key])})")
    return dict(data)


def _is(value: Any, hint: Any) -> bool:
    """Whether ``value`` (as ``tomllib`` returns it) has the annotated type ``hint``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_is(value, a) for a in args if a is not type(None))
    if origin is list:
        return isinstance(value, list) and (args[0] in (Any, OutputTable) or all(_is(v, args[0]) for v in value))
    if origin is dict:
        return isinstance(value, dict) and (args[1] is Any or all(_is(v, args[1]) for v in value.values()))
    if hint is Any:
        return True
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")
