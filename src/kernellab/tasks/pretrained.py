"""Hugging Face models in references, built from configs bundled with kernellab instead of downloads.

KernelBench's level 4 builds whole models: ``config = AutoConfig.from_pretrained("gpt2")`` at module
level and ``AutoModelForCausalLM.from_pretrained(name, config=config)`` in ``Model.__init__``. Both
download (the config, then gigabytes of weights), which an evaluation must not depend on: a machine
may have no network, and kernellab draws every weight from its own seed anyway. So in a reference
(``module.build_module``) these calls are rewritten:

- ``AutoConfig.from_pretrained(name)`` -> the bundled ``config.json`` of ``name``
  (``bundled_hf_configs/<org>--<name>.json``: the architecture fields of the published config); a
  name without one is a ``TaskError`` that lists the bundled names;
- ``<AutoModel class>.from_pretrained(name, config=c)`` -> ``<AutoModel class>.from_config(c)``
  (without ``config=``: the bundled config of ``name``): random weights, which kernellab's seeded
  initialisation gives the reference and the candidate alike.

A name that is a local folder is left to ``transformers``.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from kernellab.tasks.model import TaskError

BUNDLED = Path(__file__).parent / "bundled_hf_configs"
CONFIG_HELPER = "__kernellab_bundled_config__"


def bundled_names() -> list[str]:
    return sorted(p.stem.replace("--", "/") for p in BUNDLED.glob("*.json"))


def bundled_config(name: Any) -> Any:
    """The ``transformers`` config of ``name`` from the bundled file (or a local folder's own)."""
    try:
        from transformers import AutoConfig, CONFIG_MAPPING
    except ImportError:
        raise TaskError("the reference builds a Hugging Face model: it needs the Python package 'transformers', "
                        "which is not installed here (pip install transformers)") from None
    if isinstance(name, (str, Path)) and Path(name).is_dir():
        return AutoConfig.from_pretrained(name)
    path = BUNDLED / (str(name).replace("/", "--") + ".json")
    if not path.is_file():
        raise TaskError(f"the reference builds the Hugging Face model {name!r}, for which kernellab bundles no "
                        f"config (it downloads nothing); bundled: {', '.join(bundled_names())}")
    values = json.loads(path.read_text())
    return CONFIG_MAPPING[values.pop("model_type")](**values)


def uses_pretrained(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "from_pretrained" for n in ast.walk(tree))


class _FromBundled(ast.NodeTransformer):
    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "from_pretrained" and isinstance(func.value, ast.Name)
                and func.value.id.startswith("Auto")):
            return node
        helper = ast.Name(CONFIG_HELPER, ast.Load())
        name = node.args[0] if node.args else next((k.value for k in node.keywords
                                                    if k.arg == "pretrained_model_name_or_path"), None)
        if name is None:
            return node
        if func.value.id == "AutoConfig":
            return ast.copy_location(ast.Call(func=helper, args=[name], keywords=[]), node)
        config = next((k.value for k in node.keywords if k.arg == "config"), None)
        if config is None:
            config = ast.Call(func=helper, args=[name], keywords=[])
        return ast.copy_location(ast.Call(func=ast.Attribute(value=func.value, attr="from_config", ctx=ast.Load()),
                                          args=[config], keywords=[]), node)


def from_bundled_configs(tree: ast.Module) -> ast.Module:
    """``tree`` with ``Auto*.from_pretrained`` calls rewritten as the module docstring says."""
    return _FromBundled().visit(tree) if uses_pretrained(tree) else tree
