"""Hotspots -> task folders that every agent and strategy can work on.

Each extracted task is a normal folder (``reference.py`` + ``task.toml``): the model's real shapes
are its seen config, batch and sequence sizes the model did not run at are its holdouts (a kernel
that hard-codes the row count fails them), a few rows are its ``small`` config for the CPU, and in
``--mode train`` it asks for the backward pass of the inputs that need gradients. The reference is
written in plain torch (``kinds.py``) so the search agent's templates can match it.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

from kernellab.optimize.kinds import KindSpec, kind_of
from kernellab.optimize.profile import Hotspot
from kernellab.optimize.records import OpRecord

_DTYPE_NAMES = {"float32", "bfloat16", "float16"}


def slug_of(h: Hotspot, index: int) -> str:
    return f"{index:02d}_" + re.sub(r"[^a-z0-9]+", "_", h.name.lower()).strip("_")


def _holdouts(sizes: dict[str, int]) -> list[dict[str, int]]:
    """Rows (or batch and sequence) the model did not run at: about half plus one, three quarters minus three."""
    out = []
    for factor, offset in ((0.5, 1), (0.75, -3)):
        h = {k: max(1, int(v * factor) + offset) for k, v in sizes.items()}
        if h != sizes and h not in out:
            out.append(h)
    return out


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    return repr(v)


def task_toml(kind: KindSpec, sizes: dict[str, int], dtype: str, backward: bool, outputs: int) -> str:
    small = {k: (1 if k in ("batch_size", "table_batch") else 4) for k in sizes}
    lines = {
        "schema": 1,
        "category": "uncategorized",  # open to every search template
        "description": kind.description + " Extracted from a model by kernellab optimize.",
        "dtypes": [dtype],
        "fp32_precision": "ieee",
        "backward": backward,
        "grad_inputs": list(kind.grad_inputs) if backward else [],
        "policy": "strict",
        "outputs": [{"compare": "allclose"}] * outputs,
        "tolerance_factor": 8,
    }
    if kind.index_inputs:
        lines["input_domain"] = {name: "index" for name in kind.index_inputs}
    text = "\n".join(f"{k} = {_toml_value(v)}" for k, v in lines.items())
    text += "\nconfigs = [" + _toml_value(sizes) + "]  # the model's own shapes"
    text += "\nholdout = [" + ", ".join(_toml_value(h) for h in _holdouts(sizes)) + "]  # batch/sequence it did not run at"
    text += "\nsmall = [" + _toml_value(small) + "]\n"
    return text


def extract(spots: list[Hotspot], out: Path, *, top: int, mode: str,
            skip_ops: tuple[str, ...] = ()) -> list[OpRecord]:
    """Write a task folder for each of the first ``top`` extractable hotspots (single ops named in
    ``skip_ops`` are left to their libraries); return their records."""

    records: list[OpRecord] = []
    for h in spots:
        kind = kind_of(h.kind, h.spec, h.shapes)
        dtype = h.dtypes[0] if h.dtypes else "float32"
        if kind is None or dtype not in _DTYPE_NAMES or any(s is None for s in h.shapes):
            continue
        if h.kind == "op" and h.spec.get("op") in skip_ops:
            continue
        h.extractable = True
        if len(records) >= top:  # not extracted: still say which template would cover it
            with tempfile.TemporaryDirectory() as tmp:
                h.template = _write_task(h, kind, dtype, Path(tmp), mode)
            continue
        slug = slug_of(h, len(records) + 1)
        folder = out / "tasks" / slug
        h.template = _write_task(h, kind, dtype, folder, mode)
        records.append(OpRecord(slug=slug, key=h.key, kind=h.kind, spec=dict(h.spec),
                                shapes=[list(s) for s in h.shapes], dtypes=h.dtypes,
                                fixed=kind.fixed([tuple(s) for s in h.shapes]), share=h.share,
                                instances=h.instances, task=f"tasks/{slug}", backward=mode == "train" and kind.backward_ok,
                                template=h.template))
    return records


def _write_task(h: Hotspot, kind: KindSpec, dtype: str, folder: Path, mode: str) -> str | None:
    """Write the task folder; the name of the first search template that implements it, if any."""
    from kernellab.kernels.template import match_templates
    from kernellab.tasks.load import load_task

    folder.mkdir(parents=True, exist_ok=True)
    source, sizes = kind.reference([tuple(s) for s in h.shapes], h.spec)
    outputs = len(h.chains[0].outputs) if h.chains else 1
    (folder / "reference.py").write_text(source)
    (folder / "task.toml").write_text(task_toml(kind, sizes, dtype, mode == "train" and kind.backward_ok, outputs))
    matches = match_templates(load_task(folder))
    return matches[0].template.name if matches else None
