"""Re-executing a reference module under a config.

A config assigns module-level constants. Rather than patching attributes after import (which would
leave derived constants such as ``input_shape = (num_classes,)`` stale), the module source is
re-executed with those top-level assignments rewritten, so everything computed from them follows.
"""

from __future__ import annotations

import ast
import hashlib
import sys
import types
from pathlib import Path
from typing import Any

from kernellab.tasks.model import TaskError


def _assigned_name(node: ast.stmt) -> str | None:
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        return node.target.id
    return None


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
    for node in _parse(source, where).body:
        name = _assigned_name(node)
        if name is None:
            continue
        expr = ast.Expression(node.value)  # type: ignore[union-attr]
        if not all(isinstance(n, _ARITHMETIC) for n in ast.walk(expr)):
            continue  # derived from other names or calls: re-evaluated, never set by a config
        try:
            value = eval(compile(expr, str(where), "eval"), {"__builtins__": {}})  # literals only, checked above
        except (ArithmeticError, TypeError, ValueError, MemoryError, RecursionError):
            continue
        if isinstance(value, (int, float, bool, str, tuple, list)):
            constants[name] = value
    return constants


def rewrite_constants(source: str, overrides: dict[str, Any], where: Path | str = "<reference>") -> ast.Module:
    tree = _parse(source, where)
    remaining = dict(overrides)
    for node in tree.body:
        name = _assigned_name(node)
        if name is not None and name in remaining:
            node.value = ast.copy_location(_literal_node(remaining.pop(name)), node.value)  # type: ignore[union-attr]
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
    sys.modules[mod_name] = module
    try:
        exec(compile(tree, str(where), "exec"), module.__dict__)
    except TaskError:
        raise
    except BaseException:
        sys.modules.pop(mod_name, None)
        raise
    return module
