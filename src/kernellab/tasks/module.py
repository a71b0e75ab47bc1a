"""Re-executing a reference module under a config.

A config assigns module-level constants. Rather than patching attributes after import (which would
leave derived constants such as ``input_shape = (num_classes,)`` stale), the module source is
re-executed with those top-level assignments rewritten, so everything computed from them follows.

References written for one GPU (``torch.randn(..., device="cuda")`` or ``.cuda()`` in ``get_inputs``)
are made to follow the evaluation's device: inside ``get_inputs`` and ``get_init_inputs`` such a device
is rewritten to the default device, which the harness sets (``torch.device(...)`` as a context) to the
device it evaluates on, or to ``meta`` while it only measures sizes. Hugging Face models are built from
bundled configs instead of downloads (``pretrained``).
"""

from __future__ import annotations

import ast
import hashlib
import sys
import types
from pathlib import Path
from typing import Any

import torch

from kernellab.tasks.model import TaskError
from kernellab.tasks.pretrained import CONFIG_HELPER, bundled_config, from_bundled_configs


def _assigned_names(node: ast.stmt) -> list[str]:
    """The names a top-level statement assigns a value to: ``n = 4``, ``n: int = 4``, ``h = w = 256``."""
    if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
        return [t.id for t in node.targets]  # type: ignore[attr-defined]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        return [node.target.id]
    return []


def _unpacked(node: ast.stmt) -> list[tuple[str, ast.expr]] | None:
    """``d, h, w = 24, 48, 48`` as its single assignments, or None for any other statement."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple) \
            and isinstance(node.value, ast.Tuple) and len(node.targets[0].elts) == len(node.value.elts) \
            and all(isinstance(t, ast.Name) for t in node.targets[0].elts) \
            and all(isinstance(n, _ARITHMETIC) for v in node.value.elts for n in ast.walk(v)):
        return [(t.id, v) for t, v in zip(node.targets[0].elts, node.value.elts)]  # type: ignore[attr-defined]
    return None


def _single_assignments(tree: ast.Module) -> ast.Module:
    """Tuple unpackings of literals (``d, h, w = 24, 48, 48``) written as one assignment per name,
    so each name is a constant a config can set."""
    body: list[ast.stmt] = []
    for node in tree.body:
        pairs = _unpacked(node)
        if pairs is None:
            body.append(node)
        else:
            body += [ast.copy_location(ast.Assign(targets=[ast.Name(name, ast.Store())], value=value), node)
                     for name, value in pairs]
    tree.body = body
    return ast.fix_missing_locations(tree)


def _parse(source: str, where: Path | str) -> ast.Module:
    try:
        return ast.parse(source, filename=str(where))
    except SyntaxError as exc:
        raise TaskError(f"{where}:{exc.lineno}: syntax error: {exc.msg}") from None


_ARITHMETIC = (ast.Expression, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Tuple, ast.List, ast.operator,
               ast.unaryop, ast.Load)


def module_constants(source: str, where: Path | str = "<reference>") -> dict[str, Any]:
    """Top-level assignments of literals or literal arithmetic (``dim = 16384``, ``N = 1 << 20``)."""
    constants: dict[str, Any] = {}
    for node in _single_assignments(_parse(source, where)).body:
        names = _assigned_names(node)
        if not names:
            continue
        expr = ast.Expression(node.value)  # type: ignore[union-attr]
        if not all(isinstance(n, _ARITHMETIC) for n in ast.walk(expr)):
            continue  # derived from other names or calls: re-evaluated, never set by a config
        try:
            value = eval(compile(expr, str(where), "eval"), {"__builtins__": {}})  # literals only, checked above
        except (ArithmeticError, TypeError, ValueError, MemoryError, RecursionError):
            continue
        if isinstance(value, (int, float, bool, str, tuple, list)):
            constants.update(dict.fromkeys(names, value))
    return constants


INPUT_FUNCTIONS = ("get_inputs", "get_init_inputs")
_DEVICE_HELPER = "__kernellab_default_device__"
# A module that a reference imports and an environment may lack, with the distribution that provides it
# where its name differs.
_DISTRIBUTIONS = {"sklearn": "scikit-learn", "cv2": "opencv-python", "yaml": "pyyaml", "PIL": "pillow"}


def _names_cuda(node: ast.expr) -> bool:
    """``"cuda"``, ``"cuda:0"`` or ``torch.device("cuda")`` (any alias of torch)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value == "cuda" or node.value.startswith("cuda:")
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "device" \
        and len(node.args) == 1 and not node.keywords and _names_cuda(node.args[0])


class _PortableDevice(ast.NodeTransformer):
    """``x.cuda()``, ``x.to("cuda")`` and ``device="cuda"`` become the default device."""

    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        helper = ast.Call(func=ast.Name(_DEVICE_HELPER, ast.Load()), args=[], keywords=[])
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "cuda" and len(node.args) <= 1:
            node.func = ast.Attribute(value=func.value, attr="to", ctx=ast.Load())
            node.args = [helper]
            node.keywords = [k for k in node.keywords if k.arg == "non_blocking"]
        elif isinstance(func, ast.Attribute) and func.attr == "to" and node.args and _names_cuda(node.args[0]):
            node.args = [helper, *node.args[1:]]
        for keyword in node.keywords:
            if keyword.arg == "device" and _names_cuda(keyword.value):
                keyword.value = helper
        return node


def _portable_devices(tree: ast.Module) -> None:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in INPUT_FUNCTIONS:
            _PortableDevice().visit(node)


def _default_device() -> torch.device:
    return torch.get_default_device()


def rewrite_constants(source: str, overrides: dict[str, Any], where: Path | str = "<reference>") -> ast.Module:
    tree = from_bundled_configs(_single_assignments(_parse(source, where)))
    _portable_devices(tree)
    remaining = dict(overrides)
    body: list[ast.stmt] = []
    for node in tree.body:
        names = _assigned_names(node)
        if len(names) > 1 and any(name in remaining for name in names):
            # ``h = w = 256`` with only ``h`` set: one assignment per name (the value is a literal)
            body += [ast.copy_location(ast.Assign(targets=[ast.Name(name, ast.Store())],
                                                  value=_literal_node(remaining.pop(name)) if name in remaining
                                                  else node.value), node) for name in names]  # type: ignore[union-attr]
            continue
        if names and names[0] in remaining:
            node.value = ast.copy_location(_literal_node(remaining.pop(names[0])), node.value)  # type: ignore[union-attr]
        body.append(node)
    tree.body = body
    if remaining:
        raise TaskError(f"{where}: config sets {sorted(remaining)[0]!r}, which is not a module-level "
                        f"constant of the reference")
    return ast.fix_missing_locations(tree)


def _literal_node(value: Any) -> ast.expr:
    return ast.parse(repr(value), mode="eval").body


def build_module(source: str, overrides: dict[str, Any] | None = None, *, name: str = "reference",
                 where: Path | str = "<reference>") -> types.ModuleType:
    """Execute ``source`` as a fresh module with ``overrides`` substituted for its constants.

    The module is registered in ``sys.modules`` under a unique name while it runs, because
    ``@triton.jit`` and ``dataclasses`` look up their defining module.
    """
    tree = rewrite_constants(source, overrides or {}, where)
    digest = hashlib.sha256((source + repr(sorted((overrides or {}).items()))).encode()).hexdigest()[:12]
    mod_name = f"kernellab_{name}_{digest}"
    module = types.ModuleType(mod_name)
    module.__file__ = str(where)
    module.__dict__[_DEVICE_HELPER] = _default_device
    module.__dict__[CONFIG_HELPER] = bundled_config
    sys.modules[mod_name] = module
    try:
        exec(compile(tree, str(where), "exec"), module.__dict__)
    except TaskError:
        raise
    except ModuleNotFoundError as exc:
        sys.modules.pop(mod_name, None)
        if exc.name is None or exc.name.split(".")[0] in sys.modules:
            raise  # a submodule of something installed, or an import the module itself rewrote: a real error
        top = exc.name.split(".")[0]
        raise TaskError(f"{where}: imports {top!r}, which is not installed here "
                        f"(pip install {_DISTRIBUTIONS.get(top, top)})") from None
    except BaseException:
        sys.modules.pop(mod_name, None)
        raise
    return module
