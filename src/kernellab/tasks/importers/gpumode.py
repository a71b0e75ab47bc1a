"""GPU MODE reference-kernels: ``problems/<set>/<problem>/task.yml`` (tests and benchmarks as parameter
dicts with seeds) and ``reference.py`` (``ref_kernel(data)``, ``generate_input(**params, seed)``,
``check_implementation``), with the ``utils.py`` and ``task.py`` that task.yml names.

Conversion: the generated reference inlines the problem's ``task.py`` and ``utils.py`` and keeps its
``reference.py`` as written (CUDA device literals mapped); every test/benchmark parameter but ``seed``
is a module-level constant, and ``get_inputs`` calls ``generate_input`` with a seed drawn from the
evaluation's seeded generator, so inputs change with kernellab's seed as the suite's change with
its own. The elements of ``data`` become forward arguments. Benchmarks are seen configs (timed),
tests edge configs; held-out configs are derived from the largest benchmark (``common.derived_sizes``).
Only problems checked by ``make_match_reference(ref_kernel, rtol=.., atol=..)`` are imported, with
those thresholds declared fixed (the suite's defaults rtol = 1e-5, atol = 1e-8 otherwise); problems
with their own checkers, distributed ones and those needing AMD's ``aiter`` are reported as skipped.
The problem's ``submission.py`` (the suite's example solution) becomes ``baseline.py``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import torch
import yaml

from kernellab.tasks.importers.common import (DEVICE_SHIM, ImportSummary, TaskFiles, cuda_on_cpu, derived_sizes,
                                              device_neutral, import_folders, run_guarded, unique_configs)

SUITE = "gpumode"
DEFAULT_RTOL, DEFAULT_ATOL = 1e-5, 1e-8  # utils.match_reference's defaults
LOCAL_IMPORT = re.compile(r"^(from (utils|task|reference) import [^\n]*(\([^)]*\))?|import (utils|task))\s*$", re.M)


def import_suite(checkout: Path, out: Path, summary: ImportSummary, only: str | None = None) -> None:
    import_folders(checkout, out, summary, suite=SUITE, under="problems", marker="task.yml",
                   what="a reference-kernels", convert=convert, only=only)


def _named_file(folder: Path, spec: dict[str, Any], name: str) -> Path | None:
    for item in spec.get("files") or []:
        if isinstance(item, dict) and item.get("name") == name and item.get("source") not in (None, "@SUBMISSION@"):
            path = (folder / item["source"]).resolve()
            return path if path.is_file() else None
    path = folder / name
    return path if path.is_file() else None


def _thresholds(source: str) -> tuple[float, float] | str:
    """(rtol, atol) of ``check_implementation = make_match_reference(ref_kernel, ...)``, or why not."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "check_implementation"
                                                for t in node.targets):
            call = node.value
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "make_match_reference":
                values = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg in ("rtol", "atol")}
                return float(values.get("rtol", DEFAULT_RTOL)), float(values.get("atol", DEFAULT_ATOL))
            return "its own checker (check_implementation is not make_match_reference)"
    if any(isinstance(n, ast.FunctionDef) and n.name == "check_implementation" for n in tree.body):
        return "its own checker (a check_implementation function)"
    return "no check_implementation"


def convert(folder: Path, rel: str) -> tuple[TaskFiles | None, str | None]:
    try:
        spec = yaml.safe_load((folder / "task.yml").read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        return None, f"unreadable task.yml: {exc}"
    if spec.get("lang") != "py":
        return None, f"not a Python problem (lang {spec.get('lang')!r})"
    reference_path = _named_file(folder, spec, "reference.py")
    if reference_path is None:
        return None, "no reference.py"
    source = reference_path.read_text()
    if re.search(r"^\s*(import|from)\s+(aiter|torch\.distributed)", source, re.M):
        return None, "needs AMD aiter or torch.distributed (multi-GPU / ROCm-only problem)"
    thresholds = _thresholds(source)
    if isinstance(thresholds, str):
        return None, thresholds
    rtol, atol = thresholds
    tests = [t for t in spec.get("tests") or [] if isinstance(t, dict)]
    benchmarks = [b for b in spec.get("benchmarks") or [] if isinstance(b, dict)]
    if not tests and not benchmarks:
        return None, "task.yml has no tests or benchmarks"
    keys = [k for k in (benchmarks or tests)[0] if k != "seed"]
    strip = [{k: v for k, v in c.items() if k != "seed"} for c in benchmarks + tests]
    if any(set(c) != set(keys) for c in strip):
        return None, "tests and benchmarks set different parameters"
    helpers = ""
    for name in ("task.py", "utils.py"):
        path = _named_file(folder, spec, name)
        if path is not None:
            helpers += f"\n# ---- the suite's {name}, as written ----\n" + LOCAL_IMPORT.sub("", path.read_text()).rstrip() + "\n"
    seen = unique_configs([c for c in strip[:len(benchmarks)]]) or unique_configs(strip[-1:])
    edge = [c for c in unique_configs(strip[len(benchmarks):]) if c not in seen]
    largest = max(seen, key=lambda c: sum(v for v in c.values() if isinstance(v, int) and not isinstance(v, bool)))
    base_reference = _reference(rel, helpers, source, largest, 0)
    probe = min(edge or seen, key=lambda c: sum(v for v in c.values() if isinstance(v, int) and not isinstance(v, bool)))
    structure, error = _structure(base_reference, probe)
    if structure is None:
        return None, f"generate_input fails on the CPU at the smallest test: {error}"
    n_inputs, mutated, cpu_error = structure
    reference = _reference(rel, helpers, source, largest, n_inputs)
    notes: list[str] = []
    if cpu_error:
        notes.append(f"the reference does not run on the CPU ({cpu_error[:120]}): a GPU evaluates it; "
                     f"in-place writes not probed")
    holdout = []
    ints = [v for v in largest.values() if isinstance(v, int) and not isinstance(v, bool)]
    for kind, sub in derived_sizes(ints):
        derived = {k: (sub.get(v, v) if isinstance(v, int) and not isinstance(v, bool) else v) for k, v in largest.items()}
        if derived in seen or derived in edge or any(h == derived for h, _ in holdout):
            continue
        ok, why = _runs(reference, derived)
        if ok:
            holdout.append((derived, f"derived {kind}"))
        else:
            notes.append(f"derived {kind} holdout dropped: {why}")
    meta: dict[str, Any] = {
        "schema": 1, "category": rel.split("/")[0],
        "description": f"GPU MODE {rel}: " + str(spec.get("description") or "").strip().splitlines()[0][:150]
        if spec.get("description") else f"GPU MODE {rel}",
        "dtypes": ["float32"], "policy": "strict",
        "outputs": [{"compare": "fixed", "rtol": rtol, "atol": atol}],
        "keep_dtype": [f"data_{i}" for i in range(n_inputs)],
        "configs": [(c, "the suite's benchmark") for c in seen],
    }
    if mutated:
        meta["mutates"] = mutated
        notes.append(f"in place: {', '.join(mutated)} (declared in mutates)")
    if edge:
        meta["edge"] = [(c, "the suite's test") for c in edge]
    if holdout:
        meta["holdout"] = holdout
    meta["small"] = [(probe, "the suite's smallest test")]
    notes.append("inputs keep the dtypes the suite's generate_input gives them (keep_dtype)")
    baseline = None
    submission = folder / "submission.py"
    if submission.is_file():
        baseline = _baseline(rel, helpers, submission.read_text(), n_inputs)
        notes.append("baseline.py: the suite's submission.py (its example solution)")
    origin = [folder / "task.yml", reference_path] + ([submission] if baseline else [])
    return TaskFiles(name=rel.replace("/", "__"), source=rel, reference=reference, toml=meta, baseline=baseline,
                     notes=notes, origin_files=origin), None


def _model(class_name: str, fn: str, n_inputs: int) -> str:
    args = ", ".join(f"data_{i}" for i in range(n_inputs))
    return f'''

class {class_name}(torch.nn.Module):
    """``{fn}(data)`` with the elements of the suite's ``data`` tuple as forward arguments."""

    def forward(self, {args}):
        return {fn}(({args},)) if _SINGLE is False else {fn}(data_0)
'''


def _reference(rel: str, helpers: str, source: str, constants: dict[str, Any], n_inputs: int) -> str:
    body = device_neutral(LOCAL_IMPORT.sub("", source)).rstrip()
    lines = "\n".join(f"{k} = {v!r}" for k, v in constants.items())
    kwargs = ", ".join(f"{k}={k}" for k in constants)
    return f'''"""GPU MODE {rel}, imported by `kernellab tasks import gpumode` (see PROVENANCE.md).

The problem's task.py, utils.py and reference.py follow as written ("cuda" device literals mapped
to the evaluation's device); the parameters of its tests and benchmarks are the module-level
constants below, and the seed comes from the evaluation's seeded generator.
"""
import torch
{DEVICE_SHIM}{device_neutral(helpers)}
# ---- the suite's reference.py, as written ----
{body}


# ---- kernellab: parameters as constants, data elements as forward arguments ----
{lines}
_SINGLE = {n_inputs == 0}
{_model("Model", "ref_kernel", max(n_inputs, 1))}

def get_inputs():
    seed = int(torch.randint(0, 2 ** 31 - 1, (), device="cpu"))
    data = generate_input({kwargs}{", " if kwargs else ""}seed=seed)
    return [data] if _SINGLE else list(data)


def get_init_inputs():
    return []
'''


def _baseline(rel: str, helpers: str, submission: str, n_inputs: int) -> str:
    return f'''"""GPU MODE {rel}: the suite's submission.py (its example solution), as ModelNew."""
import torch
{DEVICE_SHIM}{device_neutral(helpers)}
# ---- the suite's submission.py, as written ----
{device_neutral(LOCAL_IMPORT.sub("", submission)).rstrip()}

_SINGLE = {n_inputs == 0}
{_model("ModelNew", "custom_kernel", max(n_inputs, 1))}'''


def _structure(reference: str, values: dict[str, Any]) -> tuple[tuple[int, list[str] | None, str | None] | None, str | None]:
    """(number of data elements, 0 for a bare tensor; the elements the reference writes, None when the
    reference cannot run on the CPU; that failure) at ``values``."""
    from kernellab.tasks.module import build_module

    def probe():
        module = build_module(reference, values, name="import_check")
        with cuda_on_cpu():
            data = module.generate_input(**values, seed=1)
            if isinstance(data, torch.Tensor):
                _, error = run_guarded(lambda: module.ref_kernel(data))
                return 0, [] if error is None else None, error
            if not isinstance(data, (tuple, list)):
                raise TypeError(f"generate_input returns a {type(data).__name__}")
            for item in data:
                if isinstance(item, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in item):
                    raise TypeError("data holds a list of tensors")
            before = [d.clone() if isinstance(d, torch.Tensor) else d for d in data]
            _, error = run_guarded(lambda: module.ref_kernel(data))
            if error:
                return len(data), None, error
            mutated = [f"data_{i}" for i, (a, b) in enumerate(zip(data, before))
                       if isinstance(a, torch.Tensor) and not torch.equal(a, b)]
            return len(data), mutated, None

    return run_guarded(probe)


def _runs(reference: str, values: dict[str, Any]) -> tuple[bool, str | None]:
    from kernellab.tasks.module import build_module

    def attempt():
        module = build_module(reference, values, name="import_check")
        with torch.device("meta"), cuda_on_cpu():
            module.Model()(*module.get_inputs())

    _, error = run_guarded(attempt)
    if error and "meta" in error.lower():
        return True, None
    return error is None, error
