"""% of roofline: how close a measured time is to what the device's ceilings allow.

A call must move ``bytes`` through device memory and do ``flops`` of arithmetic; at the measured copy
bandwidth and matmul peak that takes at least ``max(bytes / bandwidth, flops / peak)``. The ratio of
that floor to the measured time is the % of roofline: 100% means nothing faster is possible.

The counts come from the task (``bytes`` / ``flops`` in ``task.toml``: formulas over the reference's
constants and ``elem``, the element size in bytes of the timed dtype) or by default from the call
itself: every input read once and every output written once, and ``torch.utils.flop_counter``'s
count of the reference (matmuls, convolutions, attention; elementwise work counts as zero).

Formulas come from task files, which may come from anywhere, so they are evaluated by walking the
AST with a whitelist, never with ``eval``.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kernellab.evaluate.ceilings import Ceilings

_MAX_FORMULA_CHARS = 2000
_MAX_EXPONENT = 64  # bytes and FLOPs never need more; bounds the cost of ``10 ** 10 ** 10``
_MAX_INT_BITS = 4096  # larger intermediate integers mean a malicious or broken formula

_BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow,
}
_FUNCS: dict[str, Callable[..., Any]] = {"min": min, "max": max}


def evaluate_formula(expr: str, constants: Mapping[str, Any], elem_bytes: int) -> float:
    """Evaluate a task's ``bytes`` or ``flops`` formula.

    Allowed: numbers, names of numeric ``constants`` and ``elem`` (= ``elem_bytes``), ``+ - * / // **``,
    parentheses, unary minus and ``min(...)`` / ``max(...)`` of two or more arguments. Anything else
    (attributes, subscripts, other calls, strings, comparisons, lambdas) is a ``ValueError`` that names
    what was found; so is a result that is negative or not finite.
    """
    if not isinstance(expr, str) or not expr.strip():
        raise ValueError("formula must be a non-empty string")
    if len(expr) > _MAX_FORMULA_CHARS:
        raise ValueError(f"formula is longer than {_MAX_FORMULA_CHARS} characters")
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"formula {expr!r} is not a valid expression: {exc.msg}") from None
    names: dict[str, int | float] = {}
    for name, value in constants.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            names[name] = value
    names["elem"] = int(elem_bytes)
    try:
        value = _Evaluator(expr, names).visit(tree.body)
        if isinstance(value, complex):
            raise ValueError(f"formula {expr!r} gives a complex number")
        result = float(value)
    except ZeroDivisionError:
        raise ValueError(f"formula {expr!r} divides by zero") from None
    except OverflowError:
        raise ValueError(f"formula {expr!r} overflows") from None
    except TypeError as exc:  # e.g. min() of a complex intermediate
        raise ValueError(f"formula {expr!r} cannot be evaluated: {exc}") from None
    if not math.isfinite(result) or result < 0:
        raise ValueError(f"formula {expr!r} gives {result}, not a finite non-negative number")
    return result


class _Evaluator(ast.NodeVisitor):
    def __init__(self, expr: str, names: dict[str, int | float]) -> None:
        self.expr = expr
        self.names = names

    def _reject(self, node: ast.AST, what: str) -> ValueError:
        return ValueError(f"formula {self.expr!r}: {what} is not allowed (only numbers, constant "
                          f"names, elem, + - * / // **, parentheses, min and max)")

    def generic_visit(self, node: ast.AST) -> Any:
        raise self._reject(node, type(node).__name__)

    def visit_Constant(self, node: ast.Constant) -> int | float:
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise self._reject(node, f"the constant {node.value!r}")
        return node.value

    def visit_Name(self, node: ast.Name) -> int | float:
        if node.id not in self.names:
            known = ", ".join(sorted(self.names))
            raise ValueError(f"formula {self.expr!r}: unknown name {node.id!r} (numeric names: {known})")
        return self.names[node.id]

    def visit_UnaryOp(self, node: ast.UnaryOp) -> int | float:
        if isinstance(node.op, ast.USub):
            return -self.visit(node.operand)
        if isinstance(node.op, ast.UAdd):
            return +self.visit(node.operand)
        raise self._reject(node, f"the operator {type(node.op).__name__}")

    def visit_BinOp(self, node: ast.BinOp) -> int | float:
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self._reject(node, f"the operator {type(node.op).__name__}")
        left, right = self.visit(node.left), self.visit(node.right)
        if isinstance(node.op, ast.Pow):
            if isinstance(right, complex) or abs(right) > _MAX_EXPONENT:
                raise ValueError(f"formula {self.expr!r}: exponent {right} is larger than "
                                 f"{_MAX_EXPONENT}")
            if isinstance(left, int) and left.bit_length() * abs(right) > _MAX_INT_BITS:
                raise OverflowError
        value = op(left, right)
        if isinstance(value, int) and value.bit_length() > _MAX_INT_BITS:
            raise OverflowError
        return value

    def visit_Call(self, node: ast.Call) -> int | float:
        if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCS:
            raise self._reject(node, f"the call {ast.unparse(node.func)}(...)")
        if node.keywords or len(node.args) < 2 or any(isinstance(a, ast.Starred) for a in node.args):
            raise ValueError(f"formula {self.expr!r}: {node.func.id}() takes two or more plain "
                             f"arguments")
        return _FUNCS[node.func.id](*(self.visit(a) for a in node.args))


def _tensors(obj: Any) -> Iterable[Any]:
    import torch

    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            yield from _tensors(item)
    elif isinstance(obj, Mapping):
        for item in obj.values():
            yield from _tensors(item)


def default_bytes(inputs: Any, outputs: Any) -> int:
    """Minimal traffic: every input tensor read once and every output tensor written once.

    ``inputs`` and ``outputs`` may be tensors or (nested) lists, tuples and dicts of them; other
    values (ints, floats, None) move no device memory. A view counts its own elements.
    """
    return sum(t.numel() * t.element_size() for t in _tensors(inputs)) + \
        sum(t.numel() * t.element_size() for t in _tensors(outputs))


def default_flops(fn: Callable[..., Any], args: Iterable[Any]) -> int:
    """FLOPs of ``fn(*args)`` as ``torch.utils.flop_counter`` counts them; 0 when it counts nothing.

    It counts matmuls, convolutions and attention (2·M·N·K for a matmul) and nothing elementwise, so
    a memory-bound task's roofline is its bytes term. Meta-device arguments work and cost nothing.
    """
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        fn(*args)
    return int(counter.get_total_flops())


def task_bytes(formula: str | None, constants: Mapping[str, Any], elem_bytes: int,
               inputs: Any, outputs: Any) -> float:
    """The task's ``bytes`` formula at this config, or ``default_bytes`` when it has none."""
    if formula:
        return evaluate_formula(formula, constants, elem_bytes)
    return float(default_bytes(inputs, outputs))


def task_flops(formula: str | None, constants: Mapping[str, Any], elem_bytes: int,
               fn: Callable[..., Any], args: Iterable[Any]) -> float:
    """The task's ``flops`` formula at this config, or ``default_flops`` of the reference call."""
    if formula:
        return evaluate_formula(formula, constants, elem_bytes)
    return float(default_flops(fn, args))


@dataclass(frozen=True)
class RooflinePoint:
    """Where one measured time sits against the device's ceilings."""

    achieved_gbps: float  # bytes / time, 1e9 B/s
    achieved_tflops: float  # flops / time, 1e12 FLOP/s
    pct_of_roofline: float | None  # floor / time × 100; None without ceilings
    roofline_us: float | None = None  # the floor: max(bytes / bandwidth, flops / peak)
    bound: str | None = None  # "memory" | "compute": which term sets the floor


def roofline(bytes_: float, flops: float, time_us: float, ceilings: Ceilings | None, dtype: str,
             fp32_precision: str = "ieee") -> RooflinePoint:
    """Achieved bandwidth and throughput at ``time_us``, and % of the roofline at ``dtype``.

    The matmul peak of the timed dtype is the compute ceiling (float32 at the task's precision:
    IEEE or TF32). Without ceilings (a CPU run) only the achieved rates are given.
    """
    if not time_us > 0 or not math.isfinite(time_us):
        raise ValueError(f"time must be a positive number of microseconds, not {time_us}")
    if bytes_ < 0 or flops < 0:
        raise ValueError("bytes and flops must be non-negative")
    gbps = bytes_ / time_us / 1e3
    tflops = flops / time_us / 1e6
    if ceilings is None:
        return RooflinePoint(gbps, tflops, None)
    memory_us = bytes_ / (ceilings.copy_gbps * 1e3)
    compute_us = flops / (ceilings.peak_tflops(dtype, fp32_precision) * 1e6) if flops else 0.0
    floor_us = max(memory_us, compute_us)
    return RooflinePoint(gbps, tflops, floor_us / time_us * 100.0, floor_us,
                         "compute" if compute_us > memory_us else "memory")
