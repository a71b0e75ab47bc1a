"""Elementwise ``Node`` trees as Triton statements, in float32, with forward-mode derivatives.

``TritonExpr.value(node)`` emits the statements that compute a node and returns the name holding it;
``TritonExpr.grad(node, wrt)`` emits d node / d wrt (``None``: the node does not depend on ``wrt``).
Equal subtrees are emitted once (nodes are hashable). The accurate helpers (``_tanh``, ``_expm1``,
``_log1p``) exist because the plain formulas lose all relative precision near zero, which the
verifier's tiny-input stability variant would catch; they use core ``tl`` functions only, so the
Triton interpreter runs them.

Every op here is a handful of FLOPs per element (counted in ``FLOPS``): templates use it for their
FLOP budget.
"""

from __future__ import annotations

from collections.abc import Callable

from kernellab.kernels.reference_model import Node

HELPERS = {
    "_tanh": '''
@triton.jit
def _tanh(x):
    # tanh without cancellation near 0: a Taylor polynomial below 1/8, (1 - e^-2|x|) / (1 + e^-2|x|) above
    ax = tl.abs(x)
    e = tl.exp(-2.0 * ax)
    big = (1.0 - e) / (1.0 + e)
    x2 = ax * ax
    small = ax * (1.0 + x2 * (-0.3333333333333333 + x2 * (0.13333333333333333 + x2 * -0.05396825396825397)))
    t = tl.where(ax < 0.125, small, big)
    return tl.where(x < 0.0, -t, t)
''',
    "_expm1": '''
@triton.jit
def _expm1(x):
    # exp(x) - 1 without cancellation near 0: a Taylor polynomial below 1/16
    small = x * (1.0 + x * (0.5 + x * (0.16666666666666666 + x * (0.041666666666666664 + x * (
        0.008333333333333333 + x * 0.001388888888888889)))))
    return tl.where(tl.abs(x) < 0.0625, small, tl.exp(x) - 1.0)
''',
    "_powf": '''
@triton.jit
def _powf(a, g):
    # a ** g for a number g, as torch.pow: exp(g log|a|), negated for negative a and odd whole g, NaN for
    # negative a and fractional g, 1 for g = 0 (0 ** g: 0 above zero, inf below, from the logarithm)
    gg = tl.zeros_like(a) + g
    r = tl.exp(gg * tl.log(tl.abs(a)))
    whole = tl.floor(gg) == gg
    odd = whole & (tl.floor(gg * 0.5) * 2.0 != gg)
    r = tl.where(a < 0.0, tl.where(whole, tl.where(odd, -r, r), float("nan")), r)
    return tl.where(gg == 0.0, 1.0, r)
''',
    "_dpowf": '''
@triton.jit
def _dpowf(a, g):
    # d a ** g / d a = g a ** (g - 1); 0 for g = 0 (as torch.pow's backward)
    gg = tl.zeros_like(a) + g
    return tl.where(gg == 0.0, 0.0, gg * _powf(a, gg - 1.0))
''',
    "_log1p": '''
@triton.jit
def _log1p(x):
    # log(1 + x) = log(u) * x / (u - 1) with u = 1 + x rounded: exact to a few ulp near 0
    u = 1.0 + x
    d = u - 1.0
    return tl.where(d == 0.0, x, tl.log(u) * (x / tl.where(d == 0.0, 1.0, d)))
''',
}

# FLOPs per element of each op (transcendentals count as one), for the templates' budgets.
FLOPS = {"add": 1, "sub": 1, "mul": 1, "div": 1, "neg": 1, "pow": 2, "relu": 1, "sigmoid": 3, "tanh": 6,
         "exp": 1, "erf": 1, "expm1": 2, "log1p": 4, "log": 1, "rsqrt": 1, "sqrt": 1, "square": 1, "abs": 1,
         "clamp": 2, "gelu": 8, "silu": 4, "softplus": 6, "mish": 12, "hardswish": 5, "elu": 4,
         "leaky_relu": 2, "maximum": 1, "minimum": 1, "sign": 2}
COMPARISONS = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
FLOPS.update({op: 1 for op in COMPARISONS} | {"where": 1})
ELEMENTWISE = frozenset(FLOPS)
_ARITHMETIC = frozenset({"add", "sub", "mul", "div"})
_POW_FORMULAS = (0.5, 1, 2, 3, -1, -0.5)  # exponents written as products or roots; others use _powf
_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "div": "/"}


class NotElementwise(Exception):
    """The tree holds something the emitter cannot express elementwise."""


def flops_per_element(node: Node) -> int:
    seen: set[Node] = set()
    total = 0
    for n in node.walk():
        if n in seen:
            continue
        seen.add(n)
        total += FLOPS.get(n.op, 0)
    return total


def is_elementwise(node: Node, leaf_ok: Callable[[Node], bool]) -> bool:
    """Whether ``node`` is made of emitter ops over leaves that ``leaf_ok`` accepts."""
    try:
        _check(node, leaf_ok)
        _check_booleans(node, None)
    except NotElementwise:
        return False
    return True


def _check_booleans(node: Node, parent: Node | None) -> None:
    """Comparisons give 0/1 here but booleans in PyTorch: they may only be the condition of a ``where`` or
    an operand of arithmetic beside a number-valued operand (which makes PyTorch's result a number too);
    a boolean result, or arithmetic of booleans alone, is not modelled."""
    if node.op in COMPARISONS:
        if parent is None:
            raise NotElementwise("a boolean result")
        if parent.op == "where":
            if parent.args[0] != node:
                raise NotElementwise("a boolean branch of where")
        elif parent.op not in _ARITHMETIC or all(a.op in COMPARISONS for a in parent.args):
            raise NotElementwise(f"a boolean operand of {parent.op}")
    if node.op == "where" and all(a.op in COMPARISONS for a in node.args[1:]):
        raise NotElementwise("where of booleans")
    for arg in node.args:
        _check_booleans(arg, node)


def _check(node: Node, leaf_ok: Callable[[Node], bool]) -> None:
    if node.op == "const":
        if not isinstance(node.value, (int, float)) or isinstance(node.value, bool):
            raise NotElementwise(f"constant {node.value!r}")
        return
    if node.op in ("input", "param", "scalar", "opaque") or node.op not in ELEMENTWISE:
        if node.op in ("input", "param", "scalar") and leaf_ok(node):
            return
        raise NotElementwise(node.op)
    for arg in node.args:
        _check(arg, leaf_ok)
    for key, value in node.kw:
        if node.op == "gelu" and key == "approximate":
            if value.op != "const" or value.value not in ("none", "tanh"):
                raise NotElementwise("gelu approximate")
        elif value.op == "const" and value.value is None and node.op == "clamp":
            continue
        elif value.op in ("const", "scalar") or (value.op == "neg" and value.args[0].op in ("const", "scalar")):
            _check(value, leaf_ok)
        else:
            raise NotElementwise(f"{node.op}({key}=...)")
    if node.op == "pow" and node.args[1].op not in ("const", "scalar"):
        raise NotElementwise("pow with a tensor exponent")


def _num(value: float) -> str:
    text = repr(float(value))
    return text if "e" in text or "." in text or "inf" in text or "nan" in text else text + ".0"


class TritonExpr:
    """Statements for one kernel body. ``leaf`` maps input/param/scalar leaves to Triton names."""

    def __init__(self, leaf: Callable[[Node], str], indent: str = "    ", prefix: str = "t"):
        self.leaf = leaf
        self.indent = indent
        self.prefix = prefix
        self.lines: list[str] = []
        self.helpers: set[str] = set()
        self._values: dict[Node, str] = {}
        self._grads: dict[tuple[Node, Node], str | None] = {}
        self._local: dict[Node, str] = {}
        self._count = 0

    # ------------------------------------------------------------------------------------ plumbing

    def code(self) -> str:
        return "\n".join(self.indent + line for line in self.lines)

    def _new(self, expr: str) -> str:
        self._count += 1
        name = f"{self.prefix}{self._count}"
        self.lines.append(f"{name} = {expr}")
        return name

    def _kw(self, node: Node, key: str, default: float | None) -> str | None:
        value = node.kwarg(key)
        if value is None or (value.op == "const" and value.value is None):
            return None if default is None else _num(default)
        return self.value(value)

    # ------------------------------------------------------------------------------------ values

    def value(self, node: Node) -> str:
        if node.op == "const":
            return _num(node.value)
        if node.op in ("input", "param", "scalar"):
            return self.leaf(node)
        if node not in self._values:
            self._values[node] = self._new(self._formula(node))
        return self._values[node]

    def _formula(self, node: Node) -> str:
        op = node.op
        a = self.value(node.args[0])
        if op in ("add", "sub", "mul", "div"):
            b = self.value(node.args[1])
            return f"{a} {_SYMBOLS[op]} {b}"
        if op in ("maximum", "minimum"):
            return f"tl.{op}({a}, {self.value(node.args[1])})"
        if op in COMPARISONS or op in ("where", "sign"):
            return self._logical(node, a)
        if op == "neg":
            return f"-{a}"
        if op == "pow":
            n = node.args[1].value
            if node.args[1].op != "const" or n not in _POW_FORMULAS:
                self.helpers.add("_powf")
                return f"_powf({a}, {self.value(node.args[1])})"
            return {0.5: f"tl.sqrt({a})", 1: a, 2: f"{a} * {a}", 3: f"{a} * {a} * {a}", -1: f"1.0 / {a}",
                    -0.5: f"tl.rsqrt({a})"}[n]
        if op == "relu":
            return f"tl.where({a} > 0.0, {a}, 0.0)"
        if op == "sigmoid":
            return f"1.0 / (1.0 + tl.exp(-{a}))"
        if op == "tanh":
            self.helpers.add("_tanh")
            return f"_tanh({a})"
        if op in ("exp", "erf", "log", "rsqrt", "sqrt", "abs"):
            return f"tl.{op}({a})"
        if op == "expm1":
            self.helpers.add("_expm1")
            return f"_expm1({a})"
        if op == "log1p":
            self.helpers.add("_log1p")
            return f"_log1p({a})"
        if op == "square":
            return f"{a} * {a}"
        if op == "clamp":
            lo, hi = self._kw(node, "min", None), self._kw(node, "max", None)
            out = a
            if lo is not None:
                out = f"tl.maximum({out}, {lo})"
            if hi is not None:
                out = f"tl.minimum({out}, {hi})"
            return out
        if op == "gelu":
            if node.const("approximate", "none") == "tanh":
                self.helpers.add("_tanh")
                return f"0.5 * {a} * (1.0 + _tanh(0.7978845608028654 * ({a} + 0.044715 * {a} * {a} * {a})))"
            return f"0.5 * {a} * (1.0 + tl.erf({a} * 0.7071067811865476))"
        if op == "silu":
            return f"{a} / (1.0 + tl.exp(-{a}))"
        if op == "softplus":
            return self._softplus(node, a)
        if op == "mish":
            self.helpers.update({"_tanh", "_log1p"})
            sp = self._new(f"tl.where({a} > 20.0, {a}, _log1p(tl.exp(tl.minimum({a}, 20.0))))")
            return f"{a} * _tanh({sp})"
        if op == "hardswish":
            return f"{a} * tl.minimum(tl.maximum({a} + 3.0, 0.0), 6.0) / 6.0"
        if op == "elu":
            self.helpers.add("_expm1")
            alpha = self._kw(node, "alpha", 1.0)
            return f"tl.where({a} > 0.0, {a}, {alpha} * _expm1(tl.minimum({a}, 0.0)))"
        if op == "leaky_relu":
            slope = self._kw(node, "negative_slope", 0.01)
            return f"tl.where({a} > 0.0, {a}, {a} * {slope})"
        raise NotElementwise(op)

    def _logical(self, node: Node, a: str) -> str:
        """Comparisons (0/1), ``where`` (its condition is 0/1 here: a comparison, or a boolean input loaded
        as a number) and ``sign`` (``a * 0`` keeps NaN a NaN, as torch.sign does)."""
        if node.op in COMPARISONS:
            return f"tl.where({a} {COMPARISONS[node.op]} {self.value(node.args[1])}, 1.0, 0.0)"
        if node.op == "where":
            return f"tl.where({a} != 0.0, {self.value(node.args[1])}, {self.value(node.args[2])})"
        return f"tl.where({a} > 0.0, 1.0, tl.where({a} < 0.0, -1.0, {a} * 0.0))"

    def _softplus(self, node: Node, a: str) -> str:
        self.helpers.add("_log1p")
        beta, threshold = self._kw(node, "beta", 1.0), self._kw(node, "threshold", 20.0)
        z = self._new(f"{beta} * {a}")
        return f"tl.where({z} > {threshold}, {a}, _log1p(tl.exp(tl.minimum({z}, {threshold}))) / {beta})"

    # ------------------------------------------------------------------------------------ derivatives

    def grad(self, node: Node, wrt: Node) -> str | None:
        """d node / d wrt, elementwise (``None`` where it is zero)."""
        key = (node, wrt)
        if key not in self._grads:
            self._grads[key] = self._derive(node, wrt)
        return self._grads[key]

    def _derive(self, node: Node, wrt: Node) -> str | None:
        if node == wrt:
            return "1.0"
        if node.op in ("const", "input", "param", "scalar"):
            return None
        op = node.op
        if op in ("add", "sub"):
            da, db = self.grad(node.args[0], wrt), self.grad(node.args[1], wrt)
            if db is None:
                return da
            if da is None:
                return db if op == "add" else self._new(f"-{db}")
            return self._new(f"{da} {'+' if op == 'add' else '-'} {db}")
        if op == "mul":
            return self._sum(self._times(self.grad(node.args[0], wrt), self.value(node.args[1])),
                             self._times(self.grad(node.args[1], wrt), self.value(node.args[0])))
        if op == "div":
            a, b = self.value(node.args[0]), self.value(node.args[1])
            da, db = self.grad(node.args[0], wrt), self.grad(node.args[1], wrt)
            left = None if da is None else self._new(f"{da} / {b}")
            right = None if db is None else self._new(f"-{a} * {db} / ({b} * {b})")
            return self._sum(left, right)
        if op in ("maximum", "minimum"):
            a, b = self.value(node.args[0]), self.value(node.args[1])
            da, db = self.grad(node.args[0], wrt), self.grad(node.args[1], wrt)
            pick = f"{a} >= {b}" if op == "maximum" else f"{a} <= {b}"
            return self._new(f"tl.where({pick}, {da or '0.0'}, {db or '0.0'})") if (da or db) else None
        if op == "neg":
            da = self.grad(node.args[0], wrt)
            return None if da is None else self._new(f"-{da}")
        if op in COMPARISONS:
            return None  # piecewise constant
        if op == "where":
            da, db = self.grad(node.args[1], wrt), self.grad(node.args[2], wrt)
            if da is None and db is None:
                return None
            return self._new(f"tl.where({self.value(node.args[0])} != 0.0, {da or '0.0'}, {db or '0.0'})")
        da = self.grad(node.args[0], wrt)
        if da is None:
            return None
        if op == "pow" and node.args[1].op not in ("const", "scalar"):
            raise NotElementwise("pow with a tensor exponent")
        if node not in self._local:
            self._local[node] = self._new(self._local_derivative(node))
        return self._times(da, self._local[node])

    def _sum(self, a: str | None, b: str | None) -> str | None:
        if a is None or b is None:
            return a or b
        return self._new(f"{a} + {b}")

    def _times(self, d: str | None, factor: str) -> str | None:
        if d is None:
            return None
        if d == "1.0":
            return factor
        return self._new(f"{d} * {factor}")

    def _local_derivative(self, node: Node) -> str:
        """d op(a) / d a, as an expression."""
        op = node.op
        a = self.value(node.args[0])
        if op in ("pow", "sigmoid", "tanh", "exp", "rsqrt", "sqrt"):
            y = self.value(node)  # only these use the op's own value
        if op == "pow":
            return self._pow_derivative(node, a, y)
        if op == "relu":
            return f"tl.where({a} > 0.0, 1.0, 0.0)"
        if op == "sigmoid":
            return f"{y} * (1.0 - {y})"
        if op == "tanh":
            return f"1.0 - {y} * {y}"
        if op == "exp":
            return y
        if op == "erf":
            return f"1.1283791670955126 * tl.exp(-{a} * {a})"
        if op == "expm1":
            return f"tl.exp({a})"
        if op == "log1p":
            return f"1.0 / (1.0 + {a})"
        if op == "log":
            return f"1.0 / {a}"
        if op == "rsqrt":
            return f"-0.5 * {y} * {y} * {y}"
        if op == "sqrt":
            return f"0.5 / {y}"
        if op == "square":
            return f"2.0 * {a}"
        if op == "abs":
            return f"tl.where({a} > 0.0, 1.0, tl.where({a} < 0.0, -1.0, 0.0))"
        if op == "clamp":
            lo, hi = self._kw(node, "min", None), self._kw(node, "max", None)
            inside = " & ".join(c for c in (lo and f"({a} >= {lo})", hi and f"({a} <= {hi})") if c) or "True"
            return f"tl.where({inside}, 1.0, 0.0)"
        if op == "gelu":
            if node.const("approximate", "none") == "tanh":
                self.helpers.add("_tanh")
                t = self._new(f"_tanh(0.7978845608028654 * ({a} + 0.044715 * {a} * {a} * {a}))")
                return (f"0.5 * (1.0 + {t}) + 0.5 * {a} * (1.0 - {t} * {t}) * 0.7978845608028654 * "
                        f"(1.0 + 0.134145 * {a} * {a})")
            return f"0.5 * (1.0 + tl.erf({a} * 0.7071067811865476)) + {a} * 0.3989422804014327 * tl.exp(-0.5 * {a} * {a})"
        if op == "silu":
            s = self._new(f"1.0 / (1.0 + tl.exp(-{a}))")
            return f"{s} * (1.0 + {a} * (1.0 - {s}))"
        if op == "softplus":
            beta, threshold = self._kw(node, "beta", 1.0), self._kw(node, "threshold", 20.0)
            return f"tl.where({beta} * {a} > {threshold}, 1.0, 1.0 / (1.0 + tl.exp(-{beta} * {a})))"
        if op == "mish":
            self.helpers.update({"_tanh", "_log1p"})
            sp = self._new(f"tl.where({a} > 20.0, {a}, _log1p(tl.exp(tl.minimum({a}, 20.0))))")
            t = self._new(f"_tanh({sp})")
            s = self._new(f"1.0 / (1.0 + tl.exp(-{a}))")
            return f"{t} + {a} * {s} * (1.0 - {t} * {t})"
        if op == "hardswish":
            return f"tl.where({a} < -3.0, 0.0, tl.where({a} <= 3.0, {a} / 3.0 + 0.5, 1.0))"
        if op == "elu":
            alpha = self._kw(node, "alpha", 1.0)
            return f"tl.where({a} > 0.0, 1.0, {alpha} * tl.exp(tl.minimum({a}, 0.0)))"
        if op == "leaky_relu":
            slope = self._kw(node, "negative_slope", 0.01)
            return f"tl.where({a} > 0.0, 1.0, {slope})"
        if op == "sign":
            return "0.0"
        raise NotElementwise(op)

    def _pow_derivative(self, node: Node, a: str, y: str) -> str:
        n = node.args[1].value
        if node.args[1].op != "const" or n not in _POW_FORMULAS:
            self.helpers.update({"_powf", "_dpowf"})
            return f"_dpowf({a}, {self.value(node.args[1])})"
        return {0.5: f"0.5 / {y}", 1: "1.0", 2: f"2.0 * {a}", 3: f"3.0 * {a} * {a}", -1: f"-{y} * {y}",
                -0.5: f"-0.5 * {y} * {y} * {y}"}[n]


def helper_source(names: set[str]) -> str:
    return "".join(HELPERS[name] + "\n" for name in sorted(names))
