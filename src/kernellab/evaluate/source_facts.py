"""What the names in a candidate file mean: the facts the static rules are checked against.

``torch.cuda.Stream`` may be spelt ``Stream`` after an import, ``S`` after an assignment, or
``getattr(torch.cuda, "Str" + "eam")``; a CUDA source may sit in a module-level string built by
concatenation; a kernel launch may sit in a helper that forward calls. ``SourceFacts`` resolves
these once (imports and aliases, string constants, own kernels, C++ sources, extension modules,
and the call graph from ``forward``) so that each rule in ``static_scan`` stays a few lines.
Scope is ignored on purpose: an over-approximation errs toward checking more code, not less.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Union

from kernellab.evaluate.scan_rules import (
    PLAIN_CONSTRUCTORS, REFERENCES, TENSOR_FACTORIES, TENSOR_TYPES, global_names, is_torch_compute, lookup,
    nn_layer, plain_receiver_name, tensor_method_is_compute,
)

_BUILTINS = frozenset(dir(builtins))
_ROOTS = ("forward", "backward", "__call__")  # where a candidate's compute path starts
_KERNEL_DECORATORS = ("jit", "autotune", "heuristics")
_STR_METHODS = ("format", "replace", "strip", "lstrip", "rstrip", "format_map")
_CUDA_CODE = re.compile(r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\b|\bvoid\s+__global__")
_PLAIN_LITERALS = (ast.Constant, ast.List, ast.Dict, ast.Set, ast.Tuple, ast.JoinedStr, ast.ListComp, ast.SetComp,
                   ast.DictComp)
Func = Union[ast.FunctionDef, ast.AsyncFunctionDef]


@dataclass(frozen=True)
class _Str:
    """A string reconstructed from literals, each piece with the source line it came from."""

    pieces: tuple[tuple[str, int], ...]

    @property
    def text(self) -> str:
        return "".join(t for t, _ in self.pieces)

    def __add__(self, other: _Str) -> _Str:
        return _Str(self.pieces + other.pieces)

    def line_at(self, offset: int) -> int:
        for text, line in self.pieces:
            if offset < len(text):
                return line + text.count("\n", 0, offset)
            offset -= len(text)
        return self.pieces[-1][1] if self.pieces else 0


_Value = Union[_Str, list[_Str], None]


def last_name(node: ast.AST) -> str | None:
    """The last name of ``a.b.c`` or ``c``: how kernels and extension modules are referred to."""
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def walk_outside_kernels(fn: ast.AST, kernels: set[Func]) -> Iterator[ast.AST]:
    """Nodes of ``fn`` except those inside nested @triton.jit functions (tl.* is the kernel)."""
    stack: list[ast.AST] = [fn]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(c for c in ast.iter_child_nodes(node) if c not in kernels)


class SourceFacts:
    """What the rules share: import aliases, string constants, own kernels, call graph, paths."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.nodes = list(ast.walk(tree))
        self.parent = {c: p for p in self.nodes for c in ast.iter_child_nodes(p)}
        self.aliases: dict[str, str] = {}
        self.bindings: Counter[str] = Counter()
        for node in self.nodes:
            self._note_binding(node)
        self.strings: dict[str, _Str | list[_Str]] = {}
        self._collect_strings()
        self._alias_assignments()
        self._callees: dict[Func, set[str]] = {}
        self.functions: list[Func] = [n for n in self.nodes
                                      if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        self.jit = {f for f in self.functions if self._is_kernel(f)}
        self.triton = {f.name for f in self.jit} | self._wrapped_kernels()
        self.cpp, self.unreadable_cpp = self._cpp_sources()
        self.cuda = set().union(*(global_names(s.text) for s in self.cpp))
        self.builders = {f.name for f in self.functions if any(  # functions that build and return a module
            isinstance(n, ast.Call) and self.is_load_inline(n) for n in ast.walk(f)) and any(
            isinstance(n, ast.Return) and n.value is not None for n in ast.walk(f))}
        self.extensions = self._extension_names()
        self.plain_names, self.nn_modules = self._attribute_facts()
        self.launching = self._launching_functions()
        self.forward = self._reachable(f for f in self.functions if f.name in _ROOTS and f not in self.jit)

    # --- names -----------------------------------------------------------------------------
    def _note_binding(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                self.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                if a.name != "*":
                    self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            self.bindings[node.id] += 1
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.bindings[node.name] += 1
        elif isinstance(node, ast.arg):
            self.bindings[node.arg] += 1

    def qualname(self, node: ast.AST) -> str | None:
        """``torch.cuda.Stream`` for any spelling of it (aliases, getattr on constant strings);
        ``builtins.open`` for an unshadowed builtin; None for local values."""
        if isinstance(node, ast.Name):
            if node.id in self.aliases:
                return self.aliases[node.id]
            return f"builtins.{node.id}" if node.id in _BUILTINS and not self.bindings[node.id] else None
        if isinstance(node, ast.Attribute):
            base = self.qualname(node.value)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, ast.Call) and len(node.args) >= 2 and self.qualname(node.func) == "builtins.getattr":
            base, attr = self.qualname(node.args[0]), self.text(node.args[1])
            return f"{base}.{attr}" if base and attr else None
        return None

    def maximal(self, node: ast.AST) -> bool:
        """True for the whole of ``a.b.c``, not its inner ``a.b``."""
        parent = self.parent.get(node)
        return not (isinstance(parent, ast.Attribute) and parent.value is node)

    def _alias_assignments(self) -> None:
        """``_F = torch.nn.functional`` and ``S = getattr(torch.cuda, "Str" + "eam")``, bound once."""
        for _ in range(3):  # chains of aliases
            for node in self.nodes:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    name = node.targets[0].id
                    if self.bindings[name] == 1 and name not in self.aliases:
                        q = self.qualname(node.value)
                        if q:
                            self.aliases[name] = q

    # --- strings -----------------------------------------------------------------------------
    def text(self, node: ast.AST) -> str | None:
        value = self.resolve(node)
        return value.text if isinstance(value, _Str) else None

    def resolve(self, node: ast.AST) -> _Value:
        """The string (or list of strings) an expression builds from literals, or None."""
        if isinstance(node, ast.Constant):
            return _Str(((node.value, node.lineno),)) if isinstance(node.value, str) else None
        if isinstance(node, ast.Name):
            return self.strings.get(node.id)
        if isinstance(node, ast.JoinedStr):
            pieces: list[tuple[str, int]] = []
            for part in node.values:
                value = self.resolve(part.value if isinstance(part, ast.FormattedValue) else part)
                pieces.extend(value.pieces if isinstance(value, _Str) else ())
            return _Str(tuple(pieces))
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
            left = self.resolve(node.left)
            if isinstance(node.op, ast.Mod):
                return left if isinstance(left, _Str) else None
            right = self.resolve(node.right)
            same = type(left) is type(right) and left is not None
            return left + right if same else None  # type: ignore[operator]
        if isinstance(node, (ast.List, ast.Tuple)):
            items: list[_Str] = []
            for elt in node.elts:
                value = self.resolve(elt.value if isinstance(elt, ast.Starred) else elt)
                if value is None:
                    return None
                items.extend(value if isinstance(value, list) else [value])
            return items
        if isinstance(node, ast.Call):
            return self._resolve_call(node)
        return None

    def _resolve_call(self, node: ast.Call) -> _Value:
        func = node.func
        if isinstance(func, ast.Attribute):
            receiver = self.resolve(func.value)
            if func.attr == "join" and isinstance(receiver, _Str) and node.args:
                items = self.resolve(node.args[0])
                if isinstance(items, list):
                    joined = items[0] if items else _Str(())
                    for item in items[1:]:
                        joined = joined + receiver + item
                    return joined
            if func.attr in _STR_METHODS and isinstance(receiver, _Str):
                return receiver  # formatting fills placeholders; the code around them is what is scanned
        if node.args and self.qualname(func) in ("textwrap.dedent", "inspect.cleandoc"):
            return self.resolve(node.args[0])
        return None

    def _collect_strings(self) -> None:
        """Module and local string variables, in source order (scope-insensitive, last one wins)."""
        assigns = [n for n in self.nodes if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign))]
        for node in sorted(assigns, key=lambda n: (n.lineno, n.col_offset)):
            if isinstance(node, ast.AugAssign):
                if isinstance(node.target, ast.Name) and isinstance(node.op, ast.Add):
                    old, new = self.strings.get(node.target.id), self.resolve(node.value)
                    if old is not None and type(old) is type(new):
                        self.strings[node.target.id] = old + new  # type: ignore[operator]
                continue
            value = self.resolve(node.value) if node.value is not None else None
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and value is not None:
                    self.strings[target.id] = value

    # --- kernels -----------------------------------------------------------------------------
    def _kernel_decorator(self, node: ast.AST) -> bool:
        q = self.qualname(node.func if isinstance(node, ast.Call) else node)
        return bool(q and q.startswith("triton.") and q.rsplit(".", 1)[-1] in _KERNEL_DECORATORS)

    def _is_kernel(self, fn: Func) -> bool:
        return any(self._kernel_decorator(d) for d in fn.decorator_list)

    def _wrapped_kernels(self) -> set[str]:
        """``k = triton.jit(fn)`` and ``triton.autotune(...)(fn)``: fn's name is the kernel's name."""
        names = set()
        for node in self.nodes:
            if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name)):
                continue
            if self._kernel_decorator(node) or isinstance(node.func, ast.Call) and self._kernel_decorator(node.func):
                names.add(node.args[0].id)
                target = self.parent.get(node)
                if isinstance(target, ast.Assign):
                    names.update(t.id for t in target.targets if isinstance(t, ast.Name))
        return names

    def is_load_inline(self, call: ast.Call) -> bool:
        q = self.qualname(call.func)
        return bool(q and q.startswith("torch.") and q.endswith("cpp_extension.load_inline"))

    def _cpp_sources(self) -> tuple[list[_Str], list[int]]:
        sources: list[_Str] = []
        unreadable: list[int] = []
        for call in (n for n in self.nodes if isinstance(n, ast.Call) and self.is_load_inline(n)):
            keywords = {kw.arg: kw.value for kw in call.keywords}
            found = False
            for index, key in ((1, "cpp_sources"), (2, "cuda_sources")):
                expr = keywords.get(key, call.args[index] if len(call.args) > index else None)
                if expr is None or isinstance(expr, ast.Constant) and expr.value is None:
                    continue
                found = True
                value = self.resolve(expr)
                if value is None:
                    unreadable.append(expr.lineno)
                    continue
                items = value if isinstance(value, list) else [value]
                joined = items[0] if items else _Str(())
                for item in items[1:]:  # load_inline joins a list of sources with newlines
                    joined = joined + _Str((("\n", item.pieces[0][1] if item.pieces else 0),)) + item
                sources.append(joined)
            if not found and None in keywords:  # load_inline(**kwargs): sources out of sight
                unreadable.append(call.lineno)
        for node in self.nodes:  # CUDA code held in strings that reach the compiler another way
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _CUDA_CODE.search(node.value) \
                    and not isinstance(self.parent.get(node), ast.Expr) \
                    and not any(node.value in s.text for s in sources):
                sources.append(_Str(((node.value, node.lineno),)))
        unique = {s.text: s for s in sources}
        return list(unique.values()), unreadable

    def _extension_names(self) -> set[str]:
        """Names that hold a load_inline module: calling their attributes launches CUDA code."""
        names: set[str] = set()
        assigns = [n for n in self.nodes if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None]
        for _ in range(3):  # ext = load_inline(...); self.ext = ext; fn = self.ext
            for node in assigns:
                value = node.value
                if self.builds_extension(value) or isinstance(value, (ast.Name, ast.Attribute)) \
                        and last_name(value) in names:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    names.update(n for n in map(last_name, targets) if n)
        return names

    def launches(self, node: ast.AST) -> bool:
        """Direct evidence of a launch: ``kernel[grid]``, an extension call, a load_inline build."""
        if isinstance(node, ast.Subscript):
            return last_name(node.value) in self.triton
        if not isinstance(node, ast.Call):
            return False
        if self.is_load_inline(node):
            return True
        func = node.func
        if isinstance(func, ast.Attribute):
            receiver = func.value
            return self.is_extension(receiver) or func.attr in ("run", "warmup") and last_name(receiver) in self.triton
        return False

    def builds_extension(self, node: ast.AST) -> bool:
        """``load_inline(...)`` or a call of a function that builds and returns one."""
        return isinstance(node, ast.Call) and (self.is_load_inline(node) or last_name(node.func) in self.builders)

    def is_extension(self, node: ast.AST) -> bool:
        """An expression holding a load_inline module: its functions are the candidate's own code."""
        return last_name(node) in self.extensions or self.builds_extension(node)

    # --- call graph --------------------------------------------------------------------------
    def keys(self, fn: Func) -> set[str]:
        parent = self.parent.get(fn)
        return {fn.name} | ({f"{parent.name}.{fn.name}"} if isinstance(parent, ast.ClassDef) else set())

    def callees(self, fn: Func) -> set[str]:
        """Names a function calls; ``Fn.apply`` calls the autograd Function's forward and backward."""
        if fn in self._callees:
            return self._callees[fn]
        out = self._callees[fn] = set()
        for node in ast.walk(fn):
            if isinstance(node, ast.Call):
                name = last_name(node.func)
                if name:
                    out.add(name)
                if name == "apply" and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
                    out |= {f"{node.func.value.id}.forward", f"{node.func.value.id}.backward"}
        return out

    def _launching_functions(self) -> set[Func]:
        found = {f for f in self.functions if f not in self.jit and any(map(self.launches, ast.walk(f)))}
        grew = True
        while grew:
            keys = set().union(*(self.keys(f) for f in found))
            more = {f for f in self.functions if f not in found and f not in self.jit and self.callees(f) & keys}
            found |= more
            grew = bool(more)
        return found

    def _reachable(self, roots) -> set[Func]:
        by_key: dict[str, list[Func]] = {}
        for f in self.functions:
            if f not in self.jit:
                for key in self.keys(f):
                    by_key.setdefault(key, []).append(f)
        seen = set(roots)
        stack = list(seen)
        while stack:
            for key in self.callees(stack.pop()):
                for g in by_key.get(key, ()):
                    if g not in seen:
                        seen.add(g)
                        stack.append(g)
        return seen

    def enclosing(self, node: ast.AST) -> Func | None:
        node = self.parent.get(node)
        while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node = self.parent.get(node)
        return node

    def _attribute_facts(self) -> tuple[set[str], dict[str, str]]:
        """Names bound to plain Python values, and ``self.x = nn.Layer(...)`` library layers."""
        plain, layers = set(), {}
        for node in self.nodes:
            if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            if isinstance(value, ast.Constant) and value.value is None:
                continue  # "out = None" is a placeholder, often for a tensor
            if isinstance(value, _PLAIN_LITERALS) or isinstance(value, ast.Call) and self._plain_call(value):
                plain.update(n for n in map(last_name, targets) if n)
            elif isinstance(value, ast.Call):
                layer = nn_layer(self.qualname(value.func))
                for t in targets:
                    if layer and isinstance(t, ast.Attribute) and _is_self(t.value):
                        layers[t.attr] = layer
        return plain, layers

    def _plain_call(self, call: ast.Call) -> bool:
        q = self.qualname(call.func)
        if q is None:
            return False
        root = q.split(".")[0]
        return q in PLAIN_CONSTRUCTORS or root not in ("builtins", "torch", "triton")

    def tensor_names(self, fn: Func) -> set[str]:
        """Names in ``fn`` known to hold tensors: ``x: torch.Tensor`` parameters, torch factory results."""
        args = fn.args
        names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs) if a.annotation is not None and (
            self.qualname(a.annotation) in TENSOR_TYPES or getattr(a.annotation, "value", None) == "torch.Tensor")}
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                parts = (self.qualname(node.value.func) or "").split(".")
                if len(parts) == 2 and parts[0] == "torch" and parts[1] in TENSOR_FACTORIES:
                    names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        return names

    def plain_receiver(self, node: ast.AST) -> bool:
        if isinstance(node, _PLAIN_LITERALS):
            return True
        if isinstance(node, ast.Call):
            return self._plain_call(node)
        name = last_name(node)
        return name is not None and (name in self.plain_names or plain_receiver_name(name))

    def library_call(self, call: ast.Call) -> str | None:
        """What makes ``call`` library compute under the strict policy, or None."""
        func = call.func
        q = self.qualname(func)
        if q is not None:  # banned names (torch.load, ...) are reported by their own rule
            return q if is_torch_compute(q) and not lookup(q, REFERENCES) else None
        if isinstance(func, ast.Call) and len(func.args) >= 2 and self.qualname(func.func) == "builtins.getattr":
            name = self.text(func.args[1])  # getattr(t, "add_")(b)
            receiver = func.args[0]
            compute = name and tensor_method_is_compute(name) and not _is_self(receiver)
            return f"getattr(..., {name!r})" if compute and not self.plain_receiver(receiver) else None
        if not isinstance(func, ast.Attribute):
            return None
        receiver = func.value
        layer = func.attr if _is_self(receiver) else (
            receiver.attr if func.attr == "forward" and isinstance(receiver, ast.Attribute) and _is_self(receiver.value)
            else None)
        if layer in self.nn_modules:
            return f"self.{layer} ({self.nn_modules[layer]})"
        if not tensor_method_is_compute(func.attr) or _is_self(receiver) or _returns_no_tensor(receiver):
            return None
        return None if self.is_extension(receiver) or self.plain_receiver(receiver) else f".{func.attr}()"


def _returns_no_tensor(node: ast.AST) -> bool:
    """A method call whose name no ``torch.Tensor`` has (``d.setdefault(k, set())``): what it returns
    is not a tensor, so ``.add()`` on it is not tensor arithmetic (the run-time evidence judges
    whatever the scan cannot read)."""
    import torch

    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not hasattr(torch.Tensor, node.func.attr)


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"
