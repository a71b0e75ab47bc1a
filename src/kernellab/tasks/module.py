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


def module_constants(source: str, where: Path | str = "<reference>") -> dict[str, Any]:
    """Top-level assignments whose value is a literal (``dim = 16384``, ``shape = (4, 8)``)."""
    constants: dict[str, Any] = {}
    for node in _parse(source, where).body:
        name = _assigned_name(node)
        if name is None:
            continue
        try:
            constants[name] = ast.literal_eval(node.value)  # type: ignore[union-attr]
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
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
