"""Stage 0 evidence: an AST scan of the candidate's Python and a token scan of its C++ sources.

The GPU trace judges what actually ran (``policy.judge_trace``). This scan runs first, costs
milliseconds and needs no GPU, so it stops the common exploits before any candidate code runs, and
it is the only defence where a run shows nothing: a file read that finds nothing in the sandbox, a
fallback branch never taken, a side stream on a CPU. Each rule is a ``Rule`` record with its
rationale (``scan_rules``); the checks below apply them to the facts ``source_facts`` resolves, and a
finding names the rule, the line and what was seen.

Blind spots, on purpose: names built at run time from anything but constant strings (so a computed
``getattr`` on a module is itself a finding), and tensor arithmetic on values whose type the scan
cannot tell (the trace and the op log see those kernels).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from kernellab.evaluate.scan_rules import (
    BUILTIN_ARITHMETIC, CODE_ATTRS, DEVICE_CALL_ROOTS, FORWARD_PROBES, FRAME_ATTRS, IMPORTABLE, PROTECTED,
    REFERENCES, RULES, SUBCLASS_ATTRS, TENSOR_TYPES, Finding, cpp_findings, lookup, patch_finding,
)
from kernellab.evaluate.source_facts import SourceFacts, last_name, walk_outside_kernels
from kernellab.evaluate.verdict import Violation
from kernellab.tasks.model import Policy


@dataclass(frozen=True)
class OwnKernels:
    """The candidate's own kernels: the names its GPU work is attributed to in a trace."""

    triton: frozenset[str] = frozenset()  # @triton.jit / autotune / heuristics functions
    cuda: frozenset[str] = frozenset()  # __global__ functions in its C++ sources

    @property
    def empty(self) -> bool:
        return not (self.triton or self.cuda)


@dataclass
class ScanResult:
    violations: list[Violation] = field(default_factory=list)
    own_kernels: OwnKernels = field(default_factory=OwnKernels)
    # The kernel language as the verifier sees the code (aliases resolved, any C++ build counts):
    # "cuda" whenever C++ is compiled. The names are those of ``tasks.language.KernelLanguage``.
    language: Literal["triton", "cuda"] | None = None
    cpp_sources: list[str] = field(default_factory=list)  # one per load_inline source argument
    syntax_error: str | None = None  # "file:line: msg": a load failure, not a violation

    @property
    def passed(self) -> bool:
        return self.syntax_error is None and not self.violations


def scan_candidate(source: str, filename: str, policy: Policy) -> ScanResult:
    """Scan one candidate file. Never raises on odd code: unparsable code gives ``syntax_error``."""
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        return ScanResult(syntax_error=f"{filename}:{exc.lineno or 1}: {exc.msg}")
    except (ValueError, RecursionError, MemoryError) as exc:  # null bytes, absurd nesting
        return ScanResult(syntax_error=f"{filename}:1: {type(exc).__name__}: {exc}")
    try:
        facts = SourceFacts(tree)
        found = [] if policy is Policy.OFF else list(_findings(facts))
    except RecursionError:
        return ScanResult(syntax_error=f"{filename}:1: code nested too deeply to analyse")
    own = OwnKernels(frozenset(facts.triton), frozenset(facts.cuda))
    language = "cuda" if facts.cuda or facts.cpp else ("triton" if facts.triton else None)
    return ScanResult(_violations(found, filename, policy), own, language, [s.text for s in facts.cpp])


def _violations(findings: list[Finding], filename: str, policy: Policy) -> list[Violation]:
    out, seen = [], set()
    for f in sorted(findings, key=lambda f: f.line):
        rule = RULES[f.rule]
        kind = f.kind or rule.kind
        if policy not in rule.policies or (kind, f.line) in seen:
            continue
        seen.add((kind, f.line))
        where = f"{filename}:{f.line}" if f.line else filename
        text = " ".join(f"{f.what} {rule.says}".split())
        out.append(Violation(kind, f"{where}: {text} [{rule.name}]"))
    return out


# --- checks ------------------------------------------------------------------------------------
def _findings(facts: SourceFacts) -> Iterator[Finding]:
    if not (facts.triton or facts.cuda):
        yield Finding("own_kernel_required", 0, "no @triton.jit function and no CUDA __global__ function is defined")
    for line in facts.unreadable_cpp:
        yield Finding("readable_cpp_source", line, "a load_inline source not built from string constants")
    yield from _patching_findings(facts)  # first: on a shared line, "assigns X" says more than "X"
    yield from _reference_findings(facts)
    yield from _subclass_findings(facts)
    yield from _fallback_findings(facts)
    yield from _forward_findings(facts)
    yield from _kernel_body_findings(facts)
    for source in facts.cpp:
        for rule, offset, token in cpp_findings(source.text):
            yield Finding(rule, source.line_at(offset), f"C++ `{token}`")


def _reference_findings(facts: SourceFacts) -> Iterator[Finding]:
    """Every spelling of a banned name: imports, attribute chains, aliases, constant getattr."""
    for node in facts.nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                rule = lookup(a.name, REFERENCES) if a.name.split(".")[0] != "importlib" else None
                if rule or a.name == "builtins":
                    yield Finding(rule or "no_dynamic_code", node.lineno, f"import {a.name}")
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                q = node.module if a.name == "*" else f"{node.module}.{a.name}"
                rule = lookup(q, REFERENCES) if not q.startswith("importlib") else None
                if rule:
                    yield Finding(rule, node.lineno, f"from {node.module} import {a.name}")
                elif a.name == "*" and node.module.split(".")[0] in PROTECTED:
                    yield Finding("no_dynamic_code", node.lineno, f"from {node.module} import * (hides what is called)")
        elif isinstance(node, ast.Name) and node.id == "__builtins__":
            yield Finding("no_dynamic_code", node.lineno, "__builtins__")
        elif isinstance(node, ast.Attribute) and node.attr in FRAME_ATTRS:
            yield Finding("no_frame_access", node.lineno, f".{node.attr}")
        elif isinstance(node, ast.Attribute) and node.attr in CODE_ATTRS:
            yield Finding("no_dynamic_code", node.lineno, f".{node.attr} (a function's code object)")
        if not isinstance(node, (ast.Name, ast.Attribute, ast.Call)) or not facts.maximal(node):
            continue
        if isinstance(node, ast.Call):
            if facts.qualname(node.func) != "builtins.getattr" or len(node.args) < 2:
                continue
            base = facts.qualname(node.args[0])
            if base and facts.text(node.args[1]) is None and base.split(".")[0] != "builtins":
                yield Finding("no_dynamic_code", node.lineno, f"getattr on {base} with a computed name")
                continue
        q = facts.qualname(node)
        if q is None or _allowed_import(facts, node, q):
            continue
        rule = lookup(q, REFERENCES)
        if rule:
            yield Finding(rule, node.lineno, q)


def _allowed_import(facts: SourceFacts, node: ast.AST, q: str) -> bool:
    """``importlib.import_module("triton")`` and ``__import__("math")`` of an allowlisted module."""
    if q not in ("importlib.import_module", "builtins.__import__"):
        return False
    call = facts.parent.get(node)
    if not (isinstance(call, ast.Call) and call.func is node and call.args):
        return False
    name = facts.text(call.args[0])
    return bool(name) and name.split(".")[0] in IMPORTABLE


_MUTATORS = ("update", "setdefault", "__setitem__", "pop", "__delitem__", "clear")


def _patching_findings(facts: SourceFacts) -> Iterator[Finding]:
    """Rebinding attributes of torch, triton, time, builtins, ...: assignments, del, setattr."""
    for node in facts.nodes:
        targets: list[ast.AST] = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and getattr(node, "value", None) is not None:
            targets = [node.target]
        while targets:
            t = targets.pop()
            if isinstance(t, (ast.Tuple, ast.List)):
                targets.extend(t.elts)
                continue
            q = None
            if isinstance(t, ast.Starred):
                targets.append(t.value)
            elif isinstance(t, ast.Attribute):
                q = facts.qualname(t)
            elif isinstance(t, ast.Subscript):
                base = "builtins.__dict__" if isinstance(t.value, ast.Name) and t.value.id == "__builtins__" \
                    else facts.qualname(t.value)
                q = base if base and (base == "sys.modules" or base.endswith(".__dict__")) else None
            elif isinstance(t, ast.Name) and t.id == "__builtins__":
                q = "builtins"
            if q and q.split(".")[0] in PROTECTED:
                yield patch_finding(q, t.lineno, "assigns")
        if isinstance(node, ast.Call) and node.args:
            fq = facts.qualname(node.func)
            if fq in ("builtins.setattr", "builtins.delattr"):
                base = facts.qualname(node.args[0])
                if base and base.split(".")[0] in PROTECTED:
                    attr = facts.text(node.args[1]) if len(node.args) > 1 else None
                    yield patch_finding(f"{base}.{attr}" if attr else base, node.lineno, fq.split(".")[1] + " on")
            elif isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS:
                base = facts.qualname(node.func.value)
                if base and (base == "sys.modules" or base.endswith(".__dict__") and base.split(".")[0] in PROTECTED):
                    yield patch_finding(base, node.lineno, f"{node.func.attr}() on")


def _subclass_findings(facts: SourceFacts) -> Iterator[Finding]:
    subclasses: set[str] = set()
    classes = sorted((n for n in facts.nodes if isinstance(n, ast.ClassDef)), key=lambda n: n.lineno)
    for cls in classes:
        for base in cls.bases:
            if facts.qualname(base) in TENSOR_TYPES or isinstance(base, ast.Name) and base.id in subclasses:
                subclasses.add(cls.name)
                yield Finding("no_tensor_subclass", cls.lineno, f"class {cls.name}({ast.unparse(base)})")
    for node in facts.nodes:
        name = node.name if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else last_name(node)
        if name in SUBCLASS_ATTRS:  # def __torch_function__, __torch_function__ = ..., x._make_subclass
            yield Finding("no_tensor_subclass", node.lineno, name)


def _reraises(handler: ast.ExceptHandler) -> bool:
    """An except branch that only logs and re-raises is error reporting, not a fallback."""
    body = handler.body
    return isinstance(body[-1], ast.Raise) and all(
        isinstance(s, ast.Raise) or isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) for s in body)


def _fallback_findings(facts: SourceFacts) -> Iterator[Finding]:
    """try/except (or contextlib.suppress) around a launch, or around calls in a compute path."""
    try_types = tuple(t for t in (ast.Try, getattr(ast, "TryStar", None)) if t)
    launching_keys = set().union(*(facts.keys(f) for f in facts.launching))
    for node in facts.nodes:
        if isinstance(node, try_types) and node.handlers and not all(map(_reraises, node.handlers)):
            what = "try/except"
        elif isinstance(node, (ast.With, ast.AsyncWith)) and any(
                isinstance(i.context_expr, ast.Call) and facts.qualname(i.context_expr.func) == "contextlib.suppress"
                for i in node.items):
            what = "contextlib.suppress"
        else:
            continue
        inner = [n for stmt in node.body for n in ast.walk(stmt)]
        launch = next((n for n in inner if facts.launches(n)
                       or isinstance(n, ast.Call) and last_name(n.func) in launching_keys), None)
        fn = facts.enclosing(node)
        in_compute_path = fn is not None and (fn in facts.forward or fn in facts.launching)
        if launch is not None:
            yield Finding("no_fallback", node.lineno,
                          f"{what} around the kernel launch on line {launch.lineno} can fall back to other code")
        elif in_compute_path and any(isinstance(n, ast.Call) for n in inner):
            yield Finding("no_fallback", node.lineno,
                          f"{what} around calls in {fn.name}() is a second code path (a fallback)")


_ARITHMETIC = (ast.BinOp, ast.AugAssign, ast.UnaryOp, ast.Compare)
_IDENTITY_OPS = (ast.Is, ast.IsNot, ast.In, ast.NotIn)


def _tensor_operator(node: ast.AST, tensors: set[str]) -> bool:
    """An operator applied to a name known to hold a tensor (``out += b``, ``x * w``, ``-x``)."""
    if isinstance(node, ast.Compare):
        if any(isinstance(op, _IDENTITY_OPS) for op in node.ops):
            return False
        operands = [node.left, *node.comparators]
    elif isinstance(node, ast.UnaryOp):
        operands = [node.operand] if not isinstance(node.op, ast.Not) else []
    elif isinstance(node, ast.AugAssign):
        operands = [node.target, node.value]
    else:
        operands = [node.left, node.right]
    return any(isinstance(o, ast.Name) and o.id in tensors for o in operands)


def _builtin_arithmetic(facts: SourceFacts, call: ast.Call, tensors: set[str]) -> str | None:
    """``sum((a, b))`` or ``operator.iadd(t, b)`` on names known to hold tensors."""
    q = facts.qualname(call.func)
    if q not in BUILTIN_ARITHMETIC:
        return None
    args = [a for arg in call.args for a in (arg.elts if isinstance(arg, (ast.Tuple, ast.List)) else [arg])]
    on_tensor = any(isinstance(a, ast.Name) and a.id in tensors for a in args)
    return f"{q.removeprefix('builtins.')}() on tensors" if on_tensor else None


def _forward_findings(facts: SourceFacts) -> Iterator[Finding]:
    """Library compute (strict only) and phase probes on the paths from forward/backward."""
    for fn in facts.forward:
        tensors = facts.tensor_names(fn)
        for node in walk_outside_kernels(fn, facts.jit):
            if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, ast.MatMult):
                yield Finding("own_compute_only", node.lineno, f"the @ operator in {fn.name}()")
            elif isinstance(node, _ARITHMETIC) and _tensor_operator(node, tensors):
                yield Finding("own_compute_only", node.lineno,
                              f"tensor arithmetic `{ast.unparse(node)[:60]}` in {fn.name}()")
            elif isinstance(node, ast.Call):
                what = facts.library_call(node) or _builtin_arithmetic(facts, node, tensors)
                if what:
                    yield Finding("own_compute_only", node.lineno, f"{what} in {fn.name}()")
            if isinstance(node, (ast.Name, ast.Attribute)) and facts.maximal(node):
                q = facts.qualname(node)
                if q and lookup(q, FORWARD_PROBES):
                    yield Finding("no_phase_probe", node.lineno, f"{q} in {fn.name}()")


def _kernel_body_findings(facts: SourceFacts) -> Iterator[Finding]:
    """Calls in a @triton.jit body that resolve to a host library (torch, numpy, ...)."""
    for fn in facts.jit:
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and node not in fn.decorator_list:
                q = facts.qualname(node.func)
                if q and q.split(".")[0] not in DEVICE_CALL_ROOTS and not _in_decorator(facts, node, fn):
                    yield Finding("device_code_only", node.lineno, f"{q}() in {fn.name}()")


def _in_decorator(facts: SourceFacts, node: ast.AST, fn: ast.AST) -> bool:
    """Decorator arguments (``@triton.autotune(configs=[...])``) run on the host, once."""
    while node is not None and node is not fn:
        parent = facts.parent.get(node)
        if parent is fn and node in getattr(fn, "decorator_list", ()):
            return True
        node = parent
    return False

