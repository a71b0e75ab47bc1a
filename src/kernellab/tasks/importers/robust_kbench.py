"""robust-kbench: ``tasks/**/func_forward.py`` (``forward_fn``, ``Model(**init sizes)`` whose forward
takes ``fn=forward_fn``, ``get_inputs(**sizes)``) with ``config_forward.json``.

Conversion: every configuration key becomes a module-level constant of the generated reference
(the suite's source kept as written, its ``get_inputs`` renamed ``_suite_get_inputs`` and called with
those constants); ``get_init_inputs`` passes the init keys to ``Model`` in its parameter order, its
own defaults elsewhere. The suite crosses its lists as robust-kbench does (every init config × input
config × shared config): the single combinations are seen configs, the multi ones not among them
holdouts; where the suite's multi list adds nothing, holdouts are derived from the seen sizes
(``common.derived_sizes``). The suite checks with ``torch.allclose(atol=1e-5, rtol=1e-5)``: declared as
fixed thresholds. A task with an ``init_method`` key initialises its weights as the suite chose
(``keep_init``: kernellab does not randomise them). The suite's own ``forward.cu`` kernels become a
``baseline.py`` that builds them with ``load_inline`` and passes them as ``fn``. Backward
(``func_backward.py``) is not imported.
"""

from __future__ import annotations

import ast
import itertools
import json
import re
from pathlib import Path
from typing import Any

import torch

from kernellab.tasks.importers.common import (ImportSummary, TaskFiles, derived_sizes, import_folders, run_guarded,
                                              unique_configs)

SUITE = "robust-kbench"
TOLERANCE = 1e-5
SMALL_SIZE = 16
SIZE_KEYS_NEVER_SCALED = re.compile(r"kernel|stride|pad|dilation|group|eps|init|axis|^k$|"
                                    r"heads|p$|prob|ratio|momentum|alpha|beta|scale|slope", re.I)


def import_suite(checkout: Path, out: Path, summary: ImportSummary, only: str | None = None) -> None:
    import_folders(checkout, out, summary, suite=SUITE, under="tasks", marker="func_forward.py",
                   what="a robust-kbench", convert=convert, only=only)


def _product(configs: dict[str, Any], which: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(init kwargs, input kwargs) for every combination, as robust-kbench's ``get_configs`` makes them."""
    inits = configs.get(f"{which}_init_configs") or [{}]
    inputs = configs.get(f"{which}_input_configs") or [{}]
    shared = configs.get(f"{which}_shared_configs") or [{}]
    if which == "multi" and not configs.get("multi_shared_configs"):
        shared = configs.get("single_shared_configs") or [{}]
    return [({**i, **s}, {**x, **s}) for i, x, s in itertools.product(inits, inputs, shared)]


def _signature(tree: ast.Module, cls: str | None, fn: str) -> list[tuple[str, str | None]]:
    """(parameter, default source or None) of ``fn`` (a method of ``cls`` when given)."""
    body = tree.body
    if cls:
        found = [n for n in body if isinstance(n, ast.ClassDef) and n.name == cls]
        if not found:
            return []
        body = found[0].body
    for node in body:
        if isinstance(node, ast.FunctionDef) and node.name == fn:
            args = node.args.args[1:] if cls else node.args.args
            defaults = [None] * (len(args) - len(node.args.defaults)) + [ast.unparse(d) for d in node.args.defaults]
            return [(a.arg, d) for a, d in zip(args, defaults)]
    return []


def convert(folder: Path, rel: str) -> tuple[TaskFiles | None, str | None]:
    source = (folder / "func_forward.py").read_text()
    config_path = folder / "config_forward.json"
    if not config_path.is_file():
        return None, "no config_forward.json"
    try:
        configs = json.loads(config_path.read_text())
        tree = ast.parse(source)
    except (ValueError, SyntaxError) as exc:
        return None, f"unreadable task files: {exc}"
    init_params = _signature(tree, "Model", "__init__")
    input_params = _signature(tree, None, "get_inputs")
    if not any(isinstance(n, ast.ClassDef) and n.name == "Model" for n in tree.body) or not input_params and \
            not any(isinstance(n, ast.FunctionDef) and n.name == "get_inputs" for n in tree.body):
        return None, "func_forward.py lacks Model or get_inputs"
    seen_pairs = _product(configs, "single")
    multi_pairs = [p for p in _product(configs, "multi") if p not in seen_pairs]
    init_names = [n for n, _ in init_params]
    input_names = [n for n, _ in input_params]

    def flat(pair: tuple[dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
        init, inputs = pair
        unknown = [k for k in {**init, **inputs} if k not in init_names + input_names]
        if unknown:
            raise KeyError(unknown[0])
        return {**init, **inputs}

    try:
        seen = unique_configs([flat(p) for p in seen_pairs])
        holdout = [c for c in unique_configs([flat(p) for p in multi_pairs]) if c not in seen]
    except KeyError as exc:
        return None, f"a config sets {exc.args[0]!r}, which neither Model.__init__ nor get_inputs takes"
    keys = sorted({k for c in seen + holdout for k in c}, key=lambda k: (init_names + input_names).index(k))
    defaults = {**dict(init_params), **dict(input_params)}
    constants = {}
    for k in keys:
        value = next((c[k] for c in seen if k in c), None)
        if value is None:
            if defaults.get(k) is None:
                return None, f"{k!r} has no default and no single config"
            value = ast.literal_eval(defaults[k])
        constants[k] = value
    notes = []
    holdout_comments = ["the suite's multi configs"] * len(holdout)
    if not holdout:
        base = seen[0]
        scalable = {k: v for k, v in {**constants, **base}.items() if isinstance(v, int) and not isinstance(v, bool)
                    and not SIZE_KEYS_NEVER_SCALED.search(k)}
        for kind, sub in derived_sizes(list(scalable.values())):
            derived = {**base, **{k: sub.get(v, v) for k, v in scalable.items()}}
            if derived not in seen and derived not in holdout:
                holdout.append(derived)
                holdout_comments.append(f"derived {kind}")
    reference = _reference(source, rel, constants, init_params, input_names)
    small = {k: min(v, SMALL_SIZE) for k, v in constants.items() if isinstance(v, int) and not isinstance(v, bool)
             and v > SMALL_SIZE and not SIZE_KEYS_NEVER_SCALED.search(k)}
    if small:
        ok, why = _runs(reference, small)
        if not ok:
            notes.append(f"no small config: the reference fails on the derived one ({why})")
            small = {}
    kept = []
    for values, comment in zip(holdout, holdout_comments):
        if comment.startswith("derived"):
            ok, why = _runs(reference, values, meta_only=True)
            if not ok:
                notes.append(f"{comment} holdout dropped: {why}")
                continue
        kept.append((values, comment))
    keep_init = []
    if "init_method" in keys:
        keep_init = _parameter_names(reference, small or {})
        if keep_init:
            notes.append("weights initialised as the suite's init_method says (keep_init)")
    meta: dict[str, Any] = {
        "schema": 1, "category": rel.split("/")[0] if "/" in rel else "robust-kbench",
        "description": f"robust-kbench {rel} (forward)", "dtypes": ["float32"], "policy": "strict",
        "outputs": [{"compare": "fixed", "atol": TOLERANCE, "rtol": TOLERANCE}],
        "configs": [(c, "the suite's single config") for c in seen],
    }
    if kept:
        meta["holdout"] = kept
    if small:
        meta["small"] = [(small, f"derived: sizes above {SMALL_SIZE} cut to {SMALL_SIZE}")]
    if keep_init:
        meta["keep_init"] = keep_init
    if (folder / "func_backward.py").is_file():
        notes.append("the suite's backward task (func_backward.py) is not imported")
    baseline = None
    if (folder / "forward.cu").is_file():
        baseline = _baseline(reference, (folder / "forward.cu").read_text(), rel)
        notes.append("baseline.py: the suite's forward.cu, built with load_inline")
    origin = [folder / "func_forward.py", config_path] + ([folder / "forward.cu"] if baseline else [])
    name = rel.replace("/", "__")
    return TaskFiles(name=name, source=rel, reference=reference, toml=meta, baseline=baseline, notes=notes,
                     origin_files=origin), None


def _reference(source: str, rel: str, constants: dict[str, Any], init_params, input_names: list[str]) -> str:
    renamed = re.sub(r"^def get_inputs\(", "def _suite_get_inputs(", source, count=1, flags=re.M)
    lines = [f"{k} = {v!r}" for k, v in constants.items()]
    init_args = ", ".join(k if k in constants else (d if d is not None else "None") for k, d in init_params)
    input_kwargs = ", ".join(f"{k}={k}" for k in input_names if k in constants)
    return f'''"""robust-kbench {rel}, imported by `kernellab tasks import robust-kbench` (see PROVENANCE.md).

The suite's func_forward.py follows as written (its get_inputs renamed _suite_get_inputs); its
configuration keys are the module-level constants below, which configs set.
"""
{renamed.rstrip()}


# ---- kernellab: the suite's configuration keys as constants ----
{chr(10).join(lines)}


def get_inputs():
    return _suite_get_inputs({input_kwargs})


def get_init_inputs():
    return [{init_args}]
'''


def _baseline(reference: str, cuda_source: str, rel: str) -> str:
    name = re.sub(r"[^0-9A-Za-z_]", "_", rel)
    return f'''"""robust-kbench {rel}: the suite's own forward.cu, built with load_inline and passed to the
suite's Model as ``fn`` (the suite's own way of running it)."""
{reference.split("# ---- kernellab:")[0].rstrip()}

from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = {cuda_source!r}

_extension = None


def _built():
    global _extension
    if _extension is None:
        _extension = load_inline(name="rkb_{name}", cpp_sources="", cuda_sources=CUDA_SOURCE, verbose=False)
    return _extension


class ModelNew(Model):
    def forward(self, *inputs):
        return super().forward(*inputs, fn=_built().forward)
'''


def _runs(reference: str, values: dict[str, Any], meta_only: bool = False) -> tuple[bool, str | None]:
    from kernellab.tasks.module import build_module

    def attempt():
        module = build_module(reference, values, name="import_check")
        with torch.device("meta" if meta_only else "cpu"):
            model = module.Model(*module.get_init_inputs())
            inputs = module.get_inputs()
            with torch.no_grad():
                model(*inputs)

    _, error = run_guarded(attempt)
    if error and meta_only and "meta" in error.lower():
        return True, None
    return error is None, error


def _parameter_names(reference: str, values: dict[str, Any]) -> list[str]:
    from kernellab.tasks.module import build_module

    def names():
        module = build_module(reference, values, name="import_check")
        with torch.device("meta"):
            model = module.Model(*module.get_init_inputs())
        return [n for n, t in list(model.named_parameters()) + list(model.named_buffers()) if t.is_floating_point()]

    found, _ = run_guarded(names)
    return found or []
