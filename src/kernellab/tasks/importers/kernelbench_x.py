"""KernelBench-X: ``data/kernelbenchx/<Category>/<op>.py`` files, each a reference function, a line of
``#`` characters, and a test harness that calls the function a few times.

Conversion: the harness is run on the CPU with the function wrapped (``calls.Recorder``); each
distinct call becomes one entry of ``CASES`` in the generated ``reference.py``, selected by the config
constant ``CASE``. Calls with at least ``SEEN_MIN`` input elements are seen configs, the others (the
suite's hand-written corner cases, exact values kept) edge configs. The suite's pass criteria are
declared as fixed thresholds: ``torch.testing.assert_close`` with rtol = atol = 5e-3 for float16 and
bfloat16 outputs, 1e-5 for float32 and float64, exact for others; cosine / L1 / RMSE where the
suite's manifest (``data/kernelbenchx_v1.json``) gives ``precision_thresholds``. The suite ships no
held-out shapes: they are derived from the largest seen call (``common.derived_sizes``) and kept
where the reference runs on them. The suite's Triton examples (``examples/sources/<op>.py`` and
``predictions*.jsonl`` entries) become ``baseline.py``.
"""

from __future__ import annotations

import inspect
import json
import re
import signal
import sys
import types
from pathlib import Path
from typing import Any

import torch

from kernellab.tasks.importers.calls import (CALL, DRAW, SEEN_MIN, Recorder, Unsupported, case_numel, case_of,
                                             case_sizes, merged_domain, py_literal, result_supported, substitute)
from kernellab.tasks.importers.common import (DEVICE_SHIM, ImportSummary, Skipped, TaskFiles, cuda_on_cpu,
                                              derived_sizes, device_neutral, run_guarded, write_task)

SEPARATOR = re.compile(r"^#{20,}\s*$", re.M)
RECORD_SECONDS = 120  # one file's harness on the CPU
VERIFY_MAX_ELEMENTS = 1 << 22  # derived holdouts up to this size are run for real on the CPU, larger on meta
SUITE = "kernelbench-x"
DEFAULT_TOLERANCES = {"float16": 5e-3, "bfloat16": 5e-3, "float32": 1e-5, "float64": 1e-5, "*": 0.0}
THRESHOLD_KEYS = {"cosine_sim": "cosine", "l1_relative": "l1", "rmse": "rmse"}


def task_root(checkout: Path) -> Path:
    for candidate in (checkout / "data" / "kernelbenchx", checkout / "kernelbenchx", checkout):
        if candidate.is_dir() and any(candidate.glob("*/*.py")):
            return candidate
    raise FileNotFoundError(f"{checkout}: no data/kernelbenchx/<Category>/<op>.py files (is this a KernelBench-X checkout?)")


def import_suite(checkout: Path, out: Path, summary: ImportSummary, only: str | None = None) -> None:
    root = task_root(checkout)
    thresholds = _manifest_thresholds(checkout)
    examples = _examples(checkout)
    utils = checkout / "utils"
    if utils.is_dir():
        sys.path.insert(0, str(utils))  # the harnesses import their data_utils from there
    for path in sorted(root.glob("*/*.py")):
        rel = path.relative_to(root).as_posix()
        if only and only not in rel:
            continue
        files, reason = convert(path, rel, thresholds.get(rel), examples.get(rel))
        if files is None:
            summary.skipped.append(Skipped(rel, reason or "unknown"))
            continue
        files.origin_files.append(path)
        write_task(files, out, summary, SUITE, checkout)


def _manifest_thresholds(checkout: Path) -> dict[str, dict[str, float]]:
    manifest = checkout / "data" / "kernelbenchx_v1.json"
    if not manifest.is_file():
        return {}
    try:
        items = json.loads(manifest.read_text())
    except (OSError, ValueError):
        return {}
    return {item["file"]: item["precision_thresholds"] for item in items
            if isinstance(item, dict) and "file" in item and "precision_thresholds" in item}


def _examples(checkout: Path) -> dict[str, str]:
    """The suite's Triton example implementations by task file: ``examples/sources/<op>.py`` files and
    the ``predict`` code of ``examples/sources/*.jsonl`` entries."""
    found: dict[str, str] = {}
    sources = checkout / "examples" / "sources"
    if not sources.is_dir():
        return found
    try:
        root = task_root(checkout)
    except FileNotFoundError:
        return found
    by_stem = {p.name: p.relative_to(root).as_posix() for p in root.glob("*/*.py")}
    for path in sorted(sources.glob("*.py")):
        if path.name in by_stem:
            found[by_stem[path.name]] = path.read_text()
    for path in sorted(sources.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if isinstance(item, dict) and isinstance(item.get("predict"), str) and item.get("file") in by_stem.values():
                found.setdefault(item["file"], item["predict"])
    return found


def _function_name(reference: str, harness: str) -> str | None:
    import ast

    try:
        defined = [n.name for n in ast.parse(reference).body if isinstance(n, ast.FunctionDef)]
        called = [n.func.id for n in ast.walk(ast.parse(harness)) if isinstance(n, ast.Call)
                  and isinstance(n.func, ast.Name)]
    except SyntaxError:
        return None
    counts = {name: called.count(name) for name in defined if name in called}
    return max(counts, key=counts.get) if counts else None


class _Timeout(Exception):
    pass


def _record(path: Path, reference: str, harness: str, name: str) -> tuple[Recorder | None, str | None]:
    module = types.ModuleType(f"kernellab_import_{re.sub(r'[^0-9A-Za-z_]', '_', path.stem)}")
    module.__file__ = str(path)

    def alarm(*_):
        raise _Timeout()

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(RECORD_SECONDS)
    try:
        with cuda_on_cpu():
            torch.manual_seed(0)
            exec(compile(reference, str(path), "exec"), module.__dict__)
            recorder = Recorder(module.__dict__[name])
            module.__dict__[name] = recorder
            exec(compile(harness, str(path), "exec"), module.__dict__)
    except _Timeout:
        return None, f"the test harness ran longer than {RECORD_SECONDS} s on the CPU"
    except Exception as exc:  # noqa: BLE001 - the suite's own harness failed here
        recorder = locals().get("recorder")
        if recorder is None or not recorder.calls:
            return None, f"the test harness fails on the CPU: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return recorder, None


def convert(path: Path, rel: str, thresholds: dict[str, float] | None, example: str | None  # noqa: C901 - one skip reason per harness shape
            ) -> tuple[TaskFiles | None, str | None]:
    text = path.read_text()
    parts = SEPARATOR.split(text, maxsplit=1)
    if len(parts) != 2:
        return None, "no separator line between the reference and its test harness"
    reference, harness = parts
    name = _function_name(reference, harness)
    if name is None:
        return None, "no function of the reference part is called by the harness"
    recorder, reason = _record(path, reference, harness, name)
    if recorder is None:
        return None, reason
    if not recorder.calls:
        return None, "the harness never calls the reference function"
    notes: list[str] = []
    params = inspect.signature(recorder.fn).parameters
    cases, dropped = [], []
    for call in recorder.calls:
        why = result_supported(call.result)
        if why:
            dropped.append(why)
            continue
        try:
            cases.append(case_of(call, dict(params), exact=False))
        except Unsupported as exc:
            dropped.append(str(exc))
    if dropped:
        notes.append(f"{len(dropped)} of the harness's {len(recorder.calls)} calls left out: {sorted(set(dropped))[0]}")
    if not cases:
        return None, f"no call kernellab can represent: {dropped[0] if dropped else 'none recorded'}"
    random_reason = _randomness(recorder, cases)
    if random_reason:
        return None, random_reason
    mutated = sorted({m for c in recorder.calls for m in c.mutated if m in params})
    unique: list[dict[str, Any]] = []
    keys = set()
    for case in cases:
        if _dedupe_key(case) not in keys:
            keys.add(_dedupe_key(case))
            unique.append(case)
    seen = [c for c in unique if case_numel(c) >= SEEN_MIN] or [max(unique, key=case_numel)]
    edge = [c for c in unique if c not in seen]
    holdouts = [(kind, sub) for kind, sizes in derived_sizes(case_sizes(max(seen, key=case_numel)))
                if (sub := substitute(max(seen, key=case_numel), sizes)) is not None and sub not in unique]
    all_cases = seen + edge + [h for _, h in holdouts]
    source = generate_reference(rel, text, reference, name, params, all_cases)
    kept_holdouts = []
    for i, (kind, case) in enumerate(holdouts):
        index = len(seen) + len(edge) + i
        ok, why = _runs(source, index, case_numel(case))
        if ok:
            kept_holdouts.append((kind, index))
        else:
            notes.append(f"derived {kind} holdout dropped: the reference fails on it ({why})")
    small = _small_case(max(seen, key=case_numel))
    if small is not None and small not in all_cases:
        all_cases.append(small)
        source = generate_reference(rel, text, reference, name, params, all_cases)
        ok, why = _runs(source, len(all_cases) - 1, case_numel(small))
        if not ok:
            notes.append(f"no small config: the reference fails on the derived one ({why})")
            all_cases.pop()
            source = generate_reference(rel, text, reference, name, params, all_cases)
            small = None
    small_index = all_cases.index(small) if small is not None else None
    input_names = _input_names(params, all_cases)
    float_dtypes = sorted({t["dtype"] for c in seen + edge for t in c["tensors"].values()
                           if t["dtype"] in DEFAULT_TOLERANCES and t["dtype"] != "*"},
                          key=["float32", "float16", "bfloat16", "float64"].index)
    domains = {}
    for n in input_names:
        kinds = [c["tensors"][n]["kind"] for c in seen + edge if n in c["tensors"]]
        domain = merged_domain(kinds)
        if domain:
            domains[n] = domain
    if thresholds:
        output = {"compare": "fixed", **{THRESHOLD_KEYS[k]: float(v) for k, v in thresholds.items() if k in THRESHOLD_KEYS}}
    else:
        output = {"compare": "fixed", "atol": DEFAULT_TOLERANCES, "rtol": DEFAULT_TOLERANCES}
    category = rel.split("/")[0]
    meta: dict[str, Any] = {
        "schema": 1, "category": category,
        "description": f"KernelBench-X {rel}: {name}, {len(seen)} seen and {len(edge)} edge calls of its harness",
        "dtypes": float_dtypes or ["float32"], "policy": "strict", "outputs": [output],
    }
    if mutated:
        meta["mutates"] = [m for m in mutated if m in input_names]
        notes.append(f"in place: {', '.join(mutated)} (declared in mutates)")
    if domains:
        meta["input_domain"] = domains
    meta["configs"] = [({"CASE": i}, _label(c)) for i, c in enumerate(seen)]
    if edge:
        meta["edge"] = [({"CASE": len(seen) + i}, _label(c)) for i, c in enumerate(edge)]
    if kept_holdouts:
        meta["holdout"] = [({"CASE": i}, f"{kind}: {_label(all_cases[i])}") for kind, i in kept_holdouts]
    if small_index is not None:
        meta["small"] = [({"CASE": small_index}, f"derived: sizes above {SMALL_SIZE} cut to {SMALL_SIZE}: "
                                                 f"{_label(all_cases[small_index])}")]
    baseline = generate_baseline(example, name, params, input_names, all_cases) if example else None
    if example:
        notes.append("baseline.py: the suite's own Triton example for this op")
    stem = Path(rel).stem
    return TaskFiles(name=f"{category}/{stem}", source=rel, reference=source, toml=meta, baseline=baseline,
                     notes=notes), None


SMALL_SIZE = 16


def _small_case(case: dict[str, Any]) -> dict[str, Any] | None:
    """The CPU interpreter's config: the largest seen call with every size above ``SMALL_SIZE`` cut to it."""
    sizes = {d: SMALL_SIZE for d in case_sizes(case) if d > SMALL_SIZE}
    return substitute(case, sizes) if sizes else None


def _dedupe_key(case: dict[str, Any]) -> str:
    """Calls alike but for the statistics of their random draws (a harness drawing the same shapes
    twice) are one case: the evaluation draws new values under each seed anyway."""
    def coarse(t: dict[str, Any]) -> dict[str, Any]:
        if t["kind"] == "exact":
            return t
        return {k: v for k, v in t.items() if k not in ("mean", "std", "lo", "hi", "p")}
    return py_literal({"tensors": {n: coarse(t) for n, t in case["tensors"].items()}, "static": case["static"]})


def _label(case: dict[str, Any]) -> str:
    shapes = " ".join(f"{n}{tuple(t['shape'])}:{t['dtype']}" for n, t in case["tensors"].items())
    statics = " ".join(f"{k}={v!r}" for k, v in case["static"].items() if not isinstance(v, dict))
    return (shapes + (" " + statics if statics else ""))[:200].replace("\n", " ")


def _randomness(recorder: Recorder, cases: list[dict[str, Any]]) -> str | None:
    """A reference whose result changes with the generator state (dropout, sampling) cannot be
    checked against another implementation element by element."""
    def numel(c):
        return sum(v.numel() for v in c.arguments.values() if isinstance(v, torch.Tensor))

    # every call up to a million elements, and the largest: randomness can hang on one argument
    # (fractional max pooling draws its regions unless the call passes them)
    calls = [c for c in recorder.calls if numel(c) <= 1 << 20] + [max(recorder.calls, key=numel)]
    for call in calls:
        why = _random_call(recorder, call)
        if why:
            return why
    return None


def _random_call(recorder: Recorder, call) -> str | None:
    results = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        args = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in call.arguments.items()}
        with cuda_on_cpu():
            result, error = run_guarded(lambda args=args: _invoke(recorder.fn, args))
        if error:
            return f"the reference fails when called again: {error}"
        results.append(result)
    from kernellab.tasks.materialize import flatten_outputs

    a, b = flatten_outputs(results[0]), flatten_outputs(results[1])
    same = len(a) == len(b) and all(torch.equal(torch.as_tensor(x).nan_to_num(), torch.as_tensor(y).nan_to_num())
                                    for x, y in zip(a, b))
    return None if same else "random op: the reference's result changes with the generator state"


def _invoke(fn, arguments: dict[str, Any]):
    params = inspect.signature(fn).parameters
    positional, keywords = [], {}
    for name, value in arguments.items():
        kind = params[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            positional.extend(value)
        elif kind is inspect.Parameter.VAR_KEYWORD:
            keywords.update(value)
        elif kind is inspect.Parameter.POSITIONAL_ONLY or any(
                p.kind is inspect.Parameter.VAR_POSITIONAL for p in params.values()) and \
                list(params).index(name) < [p.kind for p in params.values()].index(inspect.Parameter.VAR_POSITIONAL):
            positional.append(value)
        else:
            keywords[name] = value
    return fn(*positional, **keywords)


def _input_names(params, cases: list[dict[str, Any]]) -> list[str]:
    names: list[str] = []
    for p in params:
        counts = [c["static"][p]["__tensors__"] for c in cases
                  if isinstance(c["static"].get(p), dict) and "__tensors__" in c["static"][p]]
        if counts:
            names += [f"{p}_{i}" for i in range(max(counts))]
        elif any(p in c["tensors"] for c in cases):
            names.append(p)
    return names


_KINDS = {inspect.Parameter.POSITIONAL_ONLY: "positional_only", inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional",
          inspect.Parameter.VAR_POSITIONAL: "var_positional", inspect.Parameter.KEYWORD_ONLY: "keyword",
          inspect.Parameter.VAR_KEYWORD: "var_keyword"}


def _direct_call(fn: str, params, input_names: list[str], cases: list[dict[str, Any]]) -> str | None:
    """``fn(a, b, key=c)`` where every case passes the same tensors and nothing else: the forward a
    reader of the reference (the search agent's templates match what it computes) can follow. None
    when a case passes other arguments or leaves a tensor out (``_call`` then binds them by name)."""
    named = [n for n in params if n != "out"]
    if any(c["static"] for c in cases) or named != input_names \
            or any(set(c["tensors"]) != set(input_names) for c in cases):
        return None
    parts = []
    for n in named:
        kind = _KINDS[params[n].kind]
        if kind in ("var_positional", "var_keyword"):
            return None
        parts.append(f"{n}={n}" if kind == "keyword" else n)
    return f"{fn}({', '.join(parts)})"


def _model_source(class_name: str, fn: str, params, input_names: list[str], cases: list[dict[str, Any]]) -> str:
    args = ", ".join(input_names)
    tensors = ", ".join(f"{n!r}: {n}" for n in input_names)
    call = _direct_call(fn, params, input_names, cases) or f"_call({fn}, _PARAMS, self.static, {{{tensors}}})"
    return f'''

_PARAMS = {[(n, _KINDS[p.kind]) for n, p in params.items() if n != "out"]!r}


class {class_name}(torch.nn.Module):
    """Calls ``{fn}`` with one case's tensors (forward arguments; None where this case has none) and
    its other arguments (given at construction, from get_init_inputs)."""

    def __init__(self, static):
        super().__init__()
        self.static = static

    def forward(self{", " + args if args else ""}):
        return {call}
'''


def generate_reference(rel: str, text: str, reference: str, name: str, params, cases: list[dict[str, Any]]) -> str:
    input_names = _input_names(params, cases)
    body = device_neutral(reference).rstrip()
    cases_src = "[\n" + "".join(f"    {py_literal(c)},\n" for c in cases) + "]"
    return f'''"""KernelBench-X {rel}, imported by `kernellab tasks import kernelbench-x` (see PROVENANCE.md).

The suite's reference function ``{name}`` is kept as written below (its "cuda" device literals mapped
to the evaluation's device). Each call of the suite's test harness is one entry of CASES; the config
constant CASE selects one. Tensors are drawn again under the evaluation's seed with the recorded
shape, dtype and value class; tensors of up to 64 elements keep the suite's exact values; the other
arguments reach the model through get_init_inputs.
"""
import math

import torch
{DEVICE_SHIM}
# ---- the suite's reference, as written ----
{body}

# ---- kernellab: the suite's calls as cases ----
{DRAW}
{CALL}
CASE = 0
CASES = {cases_src}
{_model_source("Model", name, params, input_names, cases)}

def get_inputs():
    tensors = CASES[CASE]["tensors"]
    return [_draw(tensors[n]) if n in tensors else None for n in {input_names!r}]


def get_init_inputs():
    return [CASES[CASE]["static"]]
'''


def generate_baseline(example: str, name: str, params, input_names: list[str], cases: list[dict[str, Any]]) -> str:
    return f'''"""The suite's own Triton implementation of ``{name}`` (KernelBench-X examples), wrapped as ModelNew."""
import math

import torch
{DEVICE_SHIM}
# ---- the suite's example, as written ----
{device_neutral(example).rstrip()}

# ---- kernellab: calling it like the reference ----
{CALL}
{_model_source("ModelNew", name, params, input_names, cases)}'''


def _runs(source: str, index: int, numel: int) -> tuple[bool, str | None]:
    """Does the reference run on case ``index``? For real on the CPU when small, else on meta tensors."""
    from kernellab.tasks.module import build_module

    def attempt():
        module = build_module(source, {"CASE": index}, name="import_check")
        device = "cpu" if numel <= VERIFY_MAX_ELEMENTS else "meta"
        with torch.device(device):
            inputs = module.get_inputs()
            model = module.Model(*module.get_init_inputs())
            with torch.no_grad():
                model(*inputs)

    _, error = run_guarded(attempt)
    if error and "meta" in error.lower():
        return True, None  # an op without a meta kernel: not a shape error; the validator runs it later
    return error is None, error
