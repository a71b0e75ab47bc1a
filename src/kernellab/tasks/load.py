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

from kernellab.tasks.model import (
    DTYPES,
    THROUGH_MAPS,
    Comparator,
    Config,
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
SCHEMA_VERSION = 1

# key -> (python type(s), required)
_TOML_KEYS: dict[str, tuple[type | tuple[type, ...], bool]] = {
    "schema": (int, True),
    "category": (str, True),
    "description": (str, False),
    "dtypes": (list, False),
    "keep_dtype": (list, False),
    "fp32_precision": (str, False),
    "backward": (bool, False),
    "grad_inputs": (list, False),
    "mutates": (list, False),
    "policy": (str, False),
    "outputs": (list, False),
    "tolerance_factor": ((int, float), False),
    "bytes": (str, False),
    "flops": (str, False),
    "input_domain": (dict, False),
    "configs": (list, False),
    "edge": (list, False),
    "holdout": (list, False),
    "small": (list, False),
}
_OUTPUT_KEYS = {"compare", "ulp", "of", "dim", "through"}
_CONFIG_LISTS = {"configs": Visibility.SEEN, "edge": Visibility.EDGE, "holdout": Visibility.HOLDOUT,
                 "small": Visibility.SMALL}


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
    meta: dict[str, Any] = {}
    if toml_path.is_file():
        try:
            meta = tomllib.loads(_read_text(toml_path))
        except tomllib.TOMLDecodeError as exc:
            raise TaskError(f"{toml_path}: invalid TOML: {exc}") from None
        _check_keys(meta, toml_path)
    baseline_path = folder / "baseline.py"
    baseline = _read_text(baseline_path) if baseline_path.is_file() else None
    constants = module_constants(source, ref)
    configs = _parse_configs(meta, constants, toml_path)
    where = str(toml_path)
    dtypes = tuple(_str_list(meta, "dtypes", where) or ["float32"])
    for dt in dtypes:
        if dt not in DTYPES:
            raise TaskError(f"{where}: dtypes: unknown dtype {dt!r} (one of {', '.join(DTYPES)})")
    precision = meta.get("fp32_precision", "ieee")
    if precision not in ("ieee", "tf32"):
        raise TaskError(f"{where}: fp32_precision must be 'ieee' or 'tf32', not {precision!r}")
    factor = meta.get("tolerance_factor", 8.0)
    if isinstance(factor, bool) or float(factor) <= 0:
        raise TaskError(f"{where}: tolerance_factor must be a positive number")
    factor = float(factor)
    if "dtypes" in meta and not dtypes:
        raise TaskError(f"{where}: dtypes is empty")
    _check_names(meta, forward_arguments(source, ref), source, where)
    seen = {c.values for c in configs if c.visibility is Visibility.SEEN}
    overlap = [c.label for c in configs if c.visibility is Visibility.HOLDOUT and c.values in seen]
    if overlap:
        raise TaskError(f"{where}: holdout config {overlap[0]} is also a seen config")
    return Task(
        id=task_id_for(folder), root=folder, source=source,
        category=meta.get("category", "uncategorized"),
        description=meta.get("description", ""),
        baseline_source=baseline,
        baseline_backend=_baseline_backend(baseline) if baseline else None,
        dtypes=dtypes,
        keep_dtype=tuple(_str_list(meta, "keep_dtype", where)),
        fp32_precision=precision,
        backward=bool(meta.get("backward", False)),
        grad_inputs=tuple(_str_list(meta, "grad_inputs", where)),
        mutates=tuple(_str_list(meta, "mutates", where)),
        policy=_enum(Policy, meta.get("policy", "strict"), where, "policy"),
        outputs=_parse_outputs(meta.get("outputs", [{}]), where),
        tolerance_factor=factor,
        bytes_formula=meta.get("bytes"),
        flops_formula=meta.get("flops"),
        input_domain=tuple((k, _enum(InputDomain, v, where, f"input_domain.{k}"))
                           for k, v in meta.get("input_domain", {}).items()),
        configs=configs,
    )


def forward_arguments(source: str, where: Path) -> list[str]:
    """The argument names of ``Model.forward`` (without self), read from the source."""
    for node in ast.parse(source, filename=str(where)).body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward":
                    return [a.arg for a in item.args.args[1:]]
    return []


def _check_names(meta: dict[str, Any], arguments: list[str], source: str, where: str) -> None:
    """Names in task.toml must exist: a typo would silently change what is measured."""
    named = [("grad_inputs", n) for n in meta.get("grad_inputs", [])] + \
        [("mutates", n) for n in meta.get("mutates", [])] + \
        [("input_domain", n) for n in meta.get("input_domain", {})] + \
        [(f"outputs[{i}].of", o["of"]) for i, o in enumerate(meta.get("outputs", [])) if isinstance(o, dict) and "of" in o]
    for key, name in named:
        if name not in arguments:
            raise TaskError(f"{where}: {key} names {name!r}, which is not an argument of Model.forward "
                            f"({', '.join(arguments)})")
    for name in meta.get("keep_dtype", []):
        if name not in arguments and f".{name}" not in source:
            raise TaskError(f"{where}: keep_dtype names {name!r}, neither a forward argument nor an attribute")


def _baseline_backend(source: str) -> str:
    if "load_inline" in source or "cpp_extension" in source:
        return "cuda"
    return "triton"


def _check_keys(meta: dict[str, Any], where: Path) -> None:
    for key, value in meta.items():
        if key not in _TOML_KEYS:
            raise TaskError(f"{where}: unknown key {key!r} (schema {SCHEMA_VERSION} keys: "
                            f"{', '.join(_TOML_KEYS)})")
        expected, _ = _TOML_KEYS[key]
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise TaskError(f"{where}: {key} has the wrong type ({type(value).__name__})")
    for key, (_, required) in _TOML_KEYS.items():
        if required and key not in meta:
            raise TaskError(f"{where}: missing required key {key!r}")
    if meta["schema"] != SCHEMA_VERSION:
        raise TaskError(f"{where}: schema {meta['schema']} is not supported (this kernellab reads "
                        f"schema {SCHEMA_VERSION})")


def _str_list(meta: dict[str, Any], key: str, where: str) -> list[str]:
    value = meta.get(key, [])
    if not all(isinstance(v, str) for v in value):
        raise TaskError(f"{where}: {key} must be a list of strings")
    return list(value)


def _enum(kind, value: Any, where: str, key: str):
    try:
        return kind(value)
    except ValueError:
        allowed = " | ".join(m.value for m in kind)
        raise TaskError(f"{where}: {key} = {value!r} is not one of {allowed}") from None


def _parse_outputs(items: list[Any], where: str) -> tuple[OutputSpec, ...]:
    specs = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise TaskError(f"{where}: outputs[{i}] must be a table")
        unknown = set(item) - _OUTPUT_KEYS
        if unknown:
            raise TaskError(f"{where}: outputs[{i}]: unknown key {sorted(unknown)[0]!r}")
        compare = _enum(Comparator, item.get("compare", "allclose"), where, f"outputs[{i}].compare")
        if compare is Comparator.VALUES_AT_INDICES and not item.get("of"):
            raise TaskError(f"{where}: outputs[{i}]: values_at_indices needs `of` (the input indexed)")
        for key in ("ulp", "dim"):
            if key in item and (not isinstance(item[key], int) or isinstance(item[key], bool)):
                raise TaskError(f"{where}: outputs[{i}].{key} must be an integer")
        through = item.get("through")
        if through is not None and (compare is not Comparator.VALUES_AT_INDICES or through not in THROUGH_MAPS):
            raise TaskError(f"{where}: outputs[{i}].through must be one of {sorted(THROUGH_MAPS)}, with "
                            f"compare = \"values_at_indices\"")
        specs.append(OutputSpec(compare=compare, ulp=item.get("ulp", 0), of=item.get("of"), dim=item.get("dim", -1),
                                through=through))
    return tuple(specs) or (OutputSpec(),)


def _parse_configs(meta: dict[str, Any], constants: dict[str, Any], where: Path) -> tuple[Config, ...]:
    configs: list[Config] = []
    for key, visibility in _CONFIG_LISTS.items():
        for i, values in enumerate(meta.get(key, [])):
            if not isinstance(values, dict):
                raise TaskError(f"{where}: {key}[{i}] must be a table of constants")
            unknown = [name for name in values if name not in constants]
            if unknown:
                raise TaskError(f"{where}: {key}[{i}] sets {unknown[0]!r}, which reference.py does not "
                                f"define as a module-level constant")
            configs.append(Config.of({**values}, visibility))
    if not any(c.visibility is Visibility.SEEN for c in configs):
        # A folder without seen configs is measured at the reference's own constants.
        configs.insert(0, Config.of({}, Visibility.SEEN))
    return tuple(configs)
