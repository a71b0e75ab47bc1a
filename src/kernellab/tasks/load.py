"""Load tasks from a folder (``reference.py`` + ``task.toml`` [+ ``baseline.py``]), a bare KernelBench file,
or a suite id such as ``normalization/rmsnorm``.

``task.toml`` schema 1 is checked strictly: an unknown key, a wrong type or an impossible value is a
``TaskError`` naming the file and the key, so a typo never silently changes what is measured.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path
from typing import Any

from kernellab.tasks.language import kernel_language
from kernellab.tasks.toml_schema import CONFIG_LISTS, OutputTable, TaskToml
from kernellab.tasks.toml_schema import SCHEMA_VERSION as TOML_SCHEMA
from kernellab.tasks.model import (
    DTYPES,
    FIXED_METRICS,
    THROUGH_MAPS,
    Comparator,
    Config,
    FixedThresholds,
    InputDomain,
    OutputSpec,
    Policy,
    Task,
    TaskError,
    Visibility,
)
from kernellab.tasks.kernelbench import with_small_config
from kernellab.tasks.module import module_constants

SUITE_ROOT = Path(__file__).parent / "suite"
SCHEMA_VERSION = TOML_SCHEMA  # kept for callers that name the version the loader reads


def load_task(spec: str | Path) -> Task:
    """Resolve ``spec`` (a suite id, a task folder or a ``.py`` file) into a validated ``Task``."""
    path = Path(spec)
    if not path.exists():
        suite_path = SUITE_ROOT / str(spec)
        if suite_path.is_dir():
            path = suite_path
        else:
            raise TaskError(f"no task {spec!r}: not a path, and not a suite id (see `kernellab tasks list`)")
    if path.is_file():
        if path.suffix != ".py":
            raise TaskError(f"{path}: a task file must be a KernelBench-style .py file")
        return _load_kernelbench_file(path)
    return _load_task_folder(path)


def task_id_for(folder: Path) -> str:
    folder = folder.resolve()
    try:
        return folder.relative_to(SUITE_ROOT.resolve()).as_posix()
    except ValueError:
        return folder.name


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"{path}: cannot read: {exc}") from None


def _load_kernelbench_file(path: Path) -> Task:
    source = _read_text(path)
    constants = module_constants(source, path)
    _require_kernelbench_names(source, path)
    config = Config.of(constants, Visibility.SEEN)
    task = Task(id=path.stem, root=path.parent, source=source, category="kernelbench",
                description=f"KernelBench problem {path.name}", policy=Policy.KERNELBENCH,
                configs=(config,), kernelbench=True, dtypes=("float32",))
    return with_small_config(task)


def _require_kernelbench_names(source: str, path: Path) -> None:
    import ast

    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise TaskError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None
    names = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if n not in names]
    if missing:
        raise TaskError(f"{path}: the reference must define {', '.join(missing)} (KernelBench format)")


def _load_task_folder(folder: Path) -> Task:
    ref = folder / "reference.py"
    if not ref.is_file():
        raise TaskError(f"{folder}: no reference.py in the task folder")
    source = _read_text(ref)
    _require_kernelbench_names(source, ref)
    toml_path = folder / "task.toml"
    where = str(toml_path)
    spec = TaskToml(schema=TOML_SCHEMA, category="uncategorized")
    if toml_path.is_file():
        try:
            meta = tomllib.loads(_read_text(toml_path))
        except tomllib.TOMLDecodeError as exc:
            raise TaskError(f"{toml_path}: invalid TOML: {exc}") from None
        spec = TaskToml.parse(meta, toml_path)  # unknown keys, missing ones, wrong types: one line
    baseline_path = folder / "baseline.py"
    baseline = _read_text(baseline_path) if baseline_path.is_file() else None
    constants = module_constants(source, ref)
    configs = _parse_configs(spec, constants, toml_path)
    if spec.dtypes is not None and not spec.dtypes:
        raise TaskError(f"{where}: dtypes is empty")
    dtypes = tuple(spec.dtypes or ["float32"])
    for dt in dtypes:
        if dt not in DTYPES:
            raise TaskError(f"{where}: dtypes: unknown dtype {dt!r} (one of {', '.join(DTYPES)})")
    if spec.fp32_precision not in ("ieee", "tf32"):
        raise TaskError(f"{where}: fp32_precision must be 'ieee' or 'tf32', not {spec.fp32_precision!r}")
    if spec.tolerance_factor <= 0:
        raise TaskError(f"{where}: tolerance_factor must be a positive number")
    _check_names(spec, forward_arguments(source, ref), source, where)
    seen = {repr(c.values) for c in configs if c.visibility is Visibility.SEEN}  # repr: list values are unhashable
    overlap = [c.label for c in configs if c.visibility is Visibility.HOLDOUT and repr(c.values) in seen]
    if overlap:
        raise TaskError(f"{where}: holdout config {overlap[0]} is also a seen config")
    return Task(
        id=task_id_for(folder), root=folder, source=source,
        category=spec.category,
        description=spec.description,
        baseline_source=baseline,
        baseline_language=kernel_language(baseline).value if baseline else None,
        dtypes=dtypes,
        keep_dtype=tuple(spec.keep_dtype),
        fp32_precision=spec.fp32_precision,
        backward=spec.backward,
        grad_inputs=tuple(spec.grad_inputs),
        mutates=tuple(spec.mutates),
        policy=_enum(Policy, spec.policy, where, "policy"),
        outputs=_parse_outputs(spec.outputs, where),
        tolerance_factor=float(spec.tolerance_factor),
        bytes_formula=spec.bytes,
        flops_formula=spec.flops,
        input_domain=tuple((k, _enum(InputDomain, v, where, f"input_domain.{k}"))
                           for k, v in spec.input_domain.items()),
        configs=configs,
        keep_init=tuple(spec.keep_init),
    )


def forward_arguments(source: str, where: Path) -> list[str]:
    """The argument names of ``Model.forward`` (without self), read from the source."""
    for node in ast.parse(source, filename=str(where)).body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward":
                    return [a.arg for a in item.args.args[1:]]
    return []


def _check_names(spec: TaskToml, arguments: list[str], source: str, where: str) -> None:
    """Names in task.toml must exist: a typo would silently change what is measured."""
    named = [("grad_inputs", n) for n in spec.grad_inputs] + [("mutates", n) for n in spec.mutates] + \
        [("input_domain", n) for n in spec.input_domain] + \
        [(f"outputs[{i}].of", o.of) for i, o in enumerate(spec.outputs) if o.of is not None]
    for key, name in named:
        if name not in arguments:
            raise TaskError(f"{where}: {key} names {name!r}, which is not an argument of Model.forward "
                            f"({', '.join(arguments)})")
    for name in spec.keep_dtype:
        if name not in arguments and f".{name}" not in source:
            raise TaskError(f"{where}: keep_dtype names {name!r}, neither a forward argument nor an attribute")


def _enum(kind, value: Any, where: str, key: str):
    try:
        return kind(value)
    except ValueError:
        allowed = " | ".join(m.value for m in kind)
        raise TaskError(f"{where}: {key} = {value!r} is not one of {allowed}") from None


def _parse_outputs(items: list[OutputTable], where: str) -> tuple[OutputSpec, ...]:
    specs = []
    for i, item in enumerate(items):
        compare = _enum(Comparator, item.compare, where, f"outputs[{i}].compare")
        if compare is Comparator.VALUES_AT_INDICES and not item.of:
            raise TaskError(f"{where}: outputs[{i}]: values_at_indices needs `of` (the input indexed)")
        if item.through is not None and (compare is not Comparator.VALUES_AT_INDICES or item.through not in THROUGH_MAPS):
            raise TaskError(f"{where}: outputs[{i}].through must be one of {sorted(THROUGH_MAPS)}, with "
                            f"compare = \"values_at_indices\"")
        fixed = _parse_fixed(item, compare, where, i)
        specs.append(OutputSpec(compare=compare, ulp=item.ulp, of=item.of, dim=item.dim, through=item.through,
                                fixed=fixed))
    return tuple(specs) or (OutputSpec(),)


def _parse_fixed(item: OutputTable, compare: Comparator, where: str, i: int) -> FixedThresholds | None:
    """``atol``, ``rtol``, ``cosine``, ``l1``, ``rmse``: a number, or a table of numbers keyed by dtype
    (``"*"`` for the others); only with ``compare = "fixed"``, which needs at least one of them."""
    given = [m for m in FIXED_METRICS if getattr(item, m) is not None]
    if compare is not Comparator.FIXED:
        if given:
            raise TaskError(f"{where}: outputs[{i}].{given[0]} needs compare = \"fixed\"")
        return None
    if not given:
        raise TaskError(f"{where}: outputs[{i}]: compare = \"fixed\" needs one of {', '.join(FIXED_METRICS)}")
    values = []
    for metric in given:
        raw = getattr(item, metric)
        table = raw if isinstance(raw, dict) else {"*": raw}
        for dtype, value in table.items():
            if dtype != "*" and dtype not in DTYPES:
                raise TaskError(f"{where}: outputs[{i}].{metric}: unknown dtype {dtype!r}")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise TaskError(f"{where}: outputs[{i}].{metric} must be a non-negative number")
        values.append((metric, tuple((k, float(v)) for k, v in table.items())))
    return FixedThresholds(tuple(values))


def _parse_configs(spec: TaskToml, constants: dict[str, Any], where: Path) -> tuple[Config, ...]:
    configs: list[Config] = []
    for key, visibility in CONFIG_LISTS.items():
        for i, values in enumerate(getattr(spec, key)):
            unknown = [name for name in values if name not in constants]
            if unknown:
                raise TaskError(f"{where}: {key}[{i}] sets {unknown[0]!r}, which reference.py does not "
                                f"define as a module-level constant")
            configs.append(Config.of({**values}, visibility))
    if not any(c.visibility is Visibility.SEEN for c in configs):
        # A folder without seen configs is measured at the reference's own constants.
        configs.insert(0, Config.of({}, Visibility.SEEN))
    return tuple(configs)
