"""Reading a reference ``Model`` without running it: its ``__init__``, its parameters, and the
expression its ``forward`` returns, as a small tree of ``Node`` records that templates match.

Only straight-line forwards are read: local assignments (inlined) and one ``return`` of an expression
or a tuple of expressions. Anything else (loops, branches, indexing) makes ``read_model`` report why,
and no template matches that task. Casts (``.to``, ``.float()``, ``.contiguous()``) read as the
identity: templates compute in float32 and write the output in the input's dtype, and the verifier
checks the output's dtype.
"""

from __future__ import annotations

import ast
import math
import textwrap
from dataclasses import dataclass, field
from typing import Any

# Leaf kinds: a forward argument, an nn.Parameter (``name`` is ``weight`` or ``linear.weight``), an
# attribute that is a Python number (``self.eps``), a constant, a submodule, or something opaque.
LEAVES = frozenset({"input", "param", "scalar", "const", "opaque"})


@dataclass(frozen=True)
class Node:
    op: str
    args: tuple[Node, ...] = ()
    kw: tuple[tuple[str, Node], ...] = ()
    name: str = ""
    value: Any = None

    def kwarg(self, key: str) -> Node | None:
        return dict(self.kw).get(key)

    def const(self, key: str, default: Any = None) -> Any:
        """A keyword's constant value (``default`` when absent; ``...`` when not a constant)."""
        node = self.kwarg(key)
        if node is None:
            return default
        return node.value if node.op == "const" else ...

    def leaves(self) -> set[Node]:
        found: set[Node] = set()
        stack = [self]
        while stack:
            node = stack.pop()
            if node.op in LEAVES:
                found.add(node)
            stack.extend(node.args)
            stack.extend(v for _, v in node.kw)
        return found

    def walk(self):
        yield self
        for a in self.args:
            yield from a.walk()
        for _, v in self.kw:
            yield from v.walk()


def const(value: Any) -> Node:
    return Node("const", value=value)


class Unsupported(Exception):
    """The reference uses something this reader does not model; the message says what."""


@dataclass(frozen=True)
class Param:
    name: str
    ndim: int | None  # None: not known from the source


@dataclass(frozen=True)
class Submodule:
    name: str
    kind: str  # "Linear"
    has_bias: bool = True
    padding_idx: int | None = None  # nn.Embedding's


@dataclass
class ReferenceModel:
    init_source: str  # Model.__init__, dedented, ready to be indented into another class
    init_args: list[str]
    forward_args: list[str]
    params: dict[str, Param] = field(default_factory=dict)
    submodules: dict[str, Submodule] = field(default_factory=dict)
    scalars: set[str] = field(default_factory=set)
    constants: dict[str, Any] = field(default_factory=dict)  # numeric module-level constants
    init_prelude: list[str] = field(default_factory=list)  # module-level statements __init__ needs
    input_ranks: dict[str, int] = field(default_factory=dict)  # from get_inputs, where it says
    outputs: tuple[Node, ...] | None = None
    # A forward that returns nothing and updates some of its arguments in place (an optimizer step):
    # each updated argument's final value, in the order first updated (``outputs`` stays None).
    mutations: dict[str, Node] = field(default_factory=dict)
    why_not: str | None = None  # why ``outputs`` is None
    source: str = ""  # the reference file, for readers of facts the tree leaves out (float32 upcasts)

    def param(self, node: Node) -> Param | None:
        return self.params.get(node.name) if node.op == "param" else None


_NAMESPACES = {"torch", "F", "torch.nn.functional", "nn.functional", "torch.special", "torch.linalg"}
_CASTS = {"to", "float", "contiguous", "type_as", "half", "bfloat16", "double", "clone", "detach"}
# torch / F / Tensor names -> op; the number of leading tensor operands; names of the positionals after.
_OPS: dict[str, tuple[str, int, tuple[str, ...]]] = {
    "relu": ("relu", 1, ()), "sigmoid": ("sigmoid", 1, ()), "tanh": ("tanh", 1, ()), "exp": ("exp", 1, ()),
    "erf": ("erf", 1, ()), "expm1": ("expm1", 1, ()), "log1p": ("log1p", 1, ()), "log": ("log", 1, ()),
    "rsqrt": ("rsqrt", 1, ()), "sqrt": ("sqrt", 1, ()), "square": ("square", 1, ()), "abs": ("abs", 1, ()),
    "neg": ("neg", 1, ()), "negative": ("neg", 1, ()), "sign": ("sign", 1, ()),
    "clamp": ("clamp", 1, ("min", "max")), "clip": ("clamp", 1, ("min", "max")),
    "gelu": ("gelu", 1, ("approximate",)), "silu": ("silu", 1, ()), "mish": ("mish", 1, ()),
    "softplus": ("softplus", 1, ("beta", "threshold")), "hardswish": ("hardswish", 1, ()),
    "elu": ("elu", 1, ("alpha",)), "leaky_relu": ("leaky_relu", 1, ("negative_slope",)),
    "pow": ("pow", 2, ()), "add": ("add", 2, ("alpha",)), "sub": ("sub", 2, ()), "mul": ("mul", 2, ()),
    "div": ("div", 2, ()), "maximum": ("maximum", 2, ()), "minimum": ("minimum", 2, ()),
    "sum": ("sum", 1, ("dim", "keepdim")), "mean": ("mean", 1, ("dim", "keepdim")),
    "amax": ("amax", 1, ("dim", "keepdim")), "amin": ("amin", 1, ("dim", "keepdim")),
    "softmax": ("softmax", 1, ("dim",)), "log_softmax": ("log_softmax", 1, ("dim",)),
    "logsumexp": ("logsumexp", 1, ("dim", "keepdim")),
    "cumsum": ("cumsum", 1, ("dim",)), "cumprod": ("cumprod", 1, ("dim",)),
    "logcumsumexp": ("logcumsumexp", 1, ("dim",)),
    "layer_norm": ("layer_norm", 1, ("normalized_shape", "weight", "bias", "eps")),
    "matmul": ("matmul", 2, ()), "mm": ("matmul", 2, ()), "t": ("t", 1, ()),
    "linear": ("linear", 1, ("weight", "bias")), "addmm": ("addmm", 3, ()),
}
_OPS.update({  # losses and lookups (cross-entropy, embedding, RMSNorm as one call)
    "cross_entropy": ("cross_entropy", 2, ("weight", "size_average", "ignore_index", "reduce", "reduction",
                                           "label_smoothing")),
    "embedding": ("embedding", 2, ("padding_idx", "max_norm", "norm_type", "scale_grad_by_freq", "sparse")),
    "rms_norm": ("rms_norm", 1, ("normalized_shape", "weight", "eps")),
    "nll_loss": ("nll_loss", 2, ("weight", "size_average", "ignore_index", "reduce", "reduction")),
})
_COMPARES = {ast.Gt: "gt", ast.GtE: "ge", ast.Lt: "lt", ast.LtE: "le"}
_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Pow: "pow", ast.MatMult: "matmul"}


def read_model(source: str) -> ReferenceModel | None:
    """The facts of ``class Model`` in a reference source; ``None`` when there is no such class."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    constants, assigned = _module_constants(tree)
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    if model is None:
        return None
    methods = {n.name: n for n in model.body if isinstance(n, ast.FunctionDef)}
    init, forward = methods.get("__init__"), methods.get("forward")
    if init is None or forward is None:
        return None
    segment = " " * init.col_offset + (ast.get_source_segment(source, init) or "")
    facts = ReferenceModel(init_source=textwrap.dedent(segment),
                           init_args=[a.arg for a in init.args.args[1:]],
                           forward_args=[a.arg for a in forward.args.args[1:]], constants=constants,
                           source=source)
    functions = _module_functions(tree)
    # ``def forward(self, a, b, fn=module_function): return fn(a, b)`` (robust-kbench's form): ``fn`` is
    # that function, not an input (the harness passes get_inputs' tensors only).
    for arg, default in zip(forward.args.args[len(forward.args.args) - len(forward.args.defaults):],
                            forward.args.defaults):
        if isinstance(default, ast.Name) and default.id in functions and arg.arg in facts.forward_args:
            functions[arg.arg] = functions[default.id]
            facts.forward_args.remove(arg.arg)
    _read_init(init, facts)
    facts.init_prelude = _prelude(init, source, tree, assigned, facts.init_args)
    facts.input_ranks = _input_ranks(tree, facts.forward_args)
    try:
        methods = {name: fn for name, fn in methods.items() if name not in ("__init__", "forward")}
        facts.outputs = _Reader(facts, functions, methods).forward(forward)
    except Unsupported as exc:
        facts.why_not = str(exc)
    return facts


def _module_constants(tree: ast.Module) -> tuple[dict[str, Any], dict[str, ast.stmt]]:
    constants: dict[str, Any] = {}
    assigned: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            assigned[name] = node
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, SyntaxError, TypeError):
                continue
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                constants[name] = value
    return constants, assigned


def _read_init(init: ast.FunctionDef, facts: ReferenceModel) -> None:
    for node in ast.walk(init):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target = node.targets[0]
        if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) \
                and len(target.elts) == len(node.value.elts):  # self.lr, self.eps = lr, eps
            pairs = list(zip(target.elts, node.value.elts))
        else:
            pairs = [(target, node.value)]
        for target, value in pairs:
            _read_attribute(target, value, facts)


def _read_attribute(target: ast.AST, value: ast.AST, facts: ReferenceModel) -> None:
    """One ``self.name = value`` of ``__init__``: a parameter, a submodule or a number."""
    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"):
        return
    name = target.attr
    callee = _dotted(value.func) if isinstance(value, ast.Call) else ""
    if callee.endswith("Parameter"):
        facts.params[name] = Param(name, _param_rank(value))
    elif callee.endswith("Linear") and isinstance(value, ast.Call):
        bias = True
        for kw in value.keywords:
            if kw.arg == "bias" and isinstance(kw.value, ast.Constant):
                bias = bool(kw.value.value)
        if len(value.args) >= 3 and isinstance(value.args[2], ast.Constant):
            bias = bool(value.args[2].value)
        facts.submodules[name] = Submodule(name, "Linear", bias)
        facts.params[f"{name}.weight"] = Param(f"{name}.weight", 2)
        if bias:
            facts.params[f"{name}.bias"] = Param(f"{name}.bias", 1)
    elif callee.endswith("Embedding") and isinstance(value, ast.Call):
        facts.submodules[name] = _embedding_module(name, value)
        facts.params[f"{name}.weight"] = Param(f"{name}.weight", 2)
    elif isinstance(value, ast.Call) and callee.rsplit(".", 1)[-1][:1].isupper():  # nn.LayerNorm(...)
        facts.submodules[name] = Submodule(name, callee.rsplit(".", 1)[-1])
    else:  # a number computed or passed in (self.eps = eps, self.scale = math.sqrt(d))
        facts.scalars.add(name)


def _param_rank(call: ast.Call) -> int | None:
    """The rank of ``nn.Parameter(torch.ones(dim))``-style parameters: the factory's shape arguments."""
    if not call.args:
        return None
    inner = call.args[0]
    while isinstance(inner, ast.BinOp):  # torch.randn(n) * 0.02
        inner = inner.left if isinstance(inner.left, ast.Call) else inner.right
    if not isinstance(inner, ast.Call):
        return None
    factory = _dotted(inner.func).rsplit(".", 1)[-1]
    if factory in ("ones", "zeros", "randn", "rand", "empty"):
        if len(inner.args) == 1 and isinstance(inner.args[0], (ast.Tuple, ast.List)):
            return len(inner.args[0].elts)
        return len(inner.args)
    if factory == "full" and inner.args and isinstance(inner.args[0], (ast.Tuple, ast.List)):
        return len(inner.args[0].elts)
    return None


_KNOWN_NAMES = {"self", "super", "torch", "nn", "F", "math", "float", "int", "len", "range", "tuple", "list",
                "bool", "max", "min", "abs", "round", "dict", "True", "False", "None", "__class__"}


def _prelude(init: ast.FunctionDef, source: str, tree: ast.Module, assigned: dict[str, ast.stmt],
             args: list[str]) -> list[str]:
    """Module-level assignments that ``__init__`` reads (copied with it); imports are the template's."""
    local = set(args) | {n.id for n in ast.walk(init) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    needed = []
    for node in ast.walk(init):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in local \
                and node.id not in _KNOWN_NAMES and node.id in assigned and node.id not in needed:
            needed.append(node.id)
    return [ast.get_source_segment(source, assigned[name]) or "" for name in needed]


def _input_ranks(tree: ast.Module, forward_args: list[str]) -> dict[str, int]:
    """Ranks of ``get_inputs``' tensors where its list is plain ``torch.randn(a, b)`` calls, named
    directly or through a local assignment, in ``get_inputs`` or a module function it returns the
    result of (``return _suite_get_inputs(batch_size=batch_size)``, as importers write it)."""
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    fn = functions.get("get_inputs")
    for _ in range(3):
        if fn is None:
            return {}
        ret = next((n for n in ast.walk(fn) if isinstance(n, ast.Return)), None)
        if ret is None:
            return {}
        if isinstance(ret.value, ast.Call) and isinstance(ret.value.func, ast.Name):
            fn = functions.get(ret.value.func.id)
            continue
        break
    if not isinstance(ret.value, (ast.List, ast.Tuple)):
        return {}
    local = {n.targets[0].id: n.value for n in ast.walk(fn)
             if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)}
    ranks = {}
    for name, elt in zip(forward_args, ret.value.elts):
        if isinstance(elt, ast.Name) and elt.id in local:
            elt = local[elt.id]
        while isinstance(elt, ast.BinOp):  # torch.randn(n, k) / k ** 0.5
            elt = elt.left
        if isinstance(elt, ast.Call) and _dotted(elt.func).rsplit(".", 1)[-1] in ("randn", "rand", "ones", "zeros") \
                and not elt.keywords and not any(isinstance(a, (ast.Tuple, ast.List, ast.Starred)) for a in elt.args):
            ranks[name] = len(elt.args)
    return ranks


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


class _Reader:
    def __init__(self, facts: ReferenceModel, functions: dict[str, ast.FunctionDef] | None = None,
                 methods: dict[str, ast.FunctionDef] | None = None):
        self.facts = facts
        self.env: dict[str, Node] = {}
        self.functions = functions or {}
        self.methods = methods or {}  # the model's helper methods, run where forward calls them as statements
        self.depth = 0
        self.mutated: list[str] = []  # forward arguments updated in place, in order
        self.aliases: dict[str, str] = {}  # in a helper method: its parameter -> the forward argument passed
        self.outer: dict[str, Node] | None = None  # in a helper method: forward's names

    def forward(self, fn: ast.FunctionDef) -> tuple[Node, ...]:
        body = list(fn.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # docstring
        for stmt in body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                self.env[stmt.targets[0].id] = self.expr(stmt.value)
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Tuple):
                self.env.update(unpack(self, stmt.targets[0], stmt.value))
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and self.depth == 0 \
                    and _inplace_root(stmt.value) is not None:
                self.expr(stmt.value)  # an in-place update: the argument's value in ``env`` changes
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and self.depth == 0 \
                    and self.outer is None and _dotted(stmt.value.func).startswith("self.") \
                    and _dotted(stmt.value.func)[5:] in self.methods:
                self.run_method(stmt.value)
            elif isinstance(stmt, ast.Return) and stmt.value is not None:
                if self.mutated:
                    raise Unsupported(f"line {stmt.lineno}: in-place updates beside a return")
                if isinstance(stmt.value, ast.Tuple):
                    return tuple(self.expr(e) for e in stmt.value.elts)
                return (self.expr(stmt.value),)
            else:
                raise Unsupported(f"line {stmt.lineno}: {type(stmt).__name__} in forward")
        if self.mutated and self.depth == 0:
            self.facts.mutations = {name: self.env[name] for name in self.mutated}
            raise Unsupported(f"forward returns nothing: it updates {', '.join(self.mutated)} in place")
        raise Unsupported("forward has no return")

    def expr(self, node: ast.AST) -> Node:
        if isinstance(node, ast.Constant):
            return const(node.value)
        if isinstance(node, ast.Name):
            if node.id in self.env:
                return self.env[node.id]
            if node.id in self.facts.forward_args:
                return Node("input", name=node.id)
            if node.id in self.facts.constants:
                return const(self.facts.constants[node.id])
            raise Unsupported(f"name {node.id!r}")
        if isinstance(node, ast.Attribute):
            return self.attribute(node)
        if isinstance(node, ast.UnaryOp):
            inner = self.expr(node.operand)
            if isinstance(node.op, ast.UAdd):
                return inner
            if isinstance(node.op, ast.USub):
                return const(-inner.value) if inner.op == "const" and isinstance(inner.value, (int, float)) \
                    else Node("neg", (inner,))
            raise Unsupported(f"unary {type(node.op).__name__}")
        if isinstance(node, ast.BinOp):
            op = _BINOPS.get(type(node.op))
            if op is None:
                raise Unsupported(f"operator {type(node.op).__name__}")
            return Node(op, (self.expr(node.left), self.expr(node.right)))
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1 or type(node.ops[0]) not in _COMPARES:
                raise Unsupported(f"comparison {ast.unparse(node)}")
            return Node(_COMPARES[type(node.ops[0])], (self.expr(node.left), self.expr(node.comparators[0])))
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Subscript):
            return subscript(self, node)
        if isinstance(node, (ast.Tuple, ast.List)):
            return Node("opaque", name=ast.unparse(node))
        raise Unsupported(f"{type(node).__name__} expression")

    def attribute(self, node: ast.Attribute) -> Node:
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            name = node.attr
            if name in self.facts.params:
                return Node("param", name=name)
            if name in self.facts.scalars:
                return Node("scalar", name=name)
            raise Unsupported(f"self.{name}")
        if node.attr == "T":
            return Node("t", (self.expr(node.value),))
        if node.attr == "dtype":
            return Node("opaque", name=ast.unparse(node))
        if _dotted(node) in _MATH_CONSTANTS:
            return const(_MATH_CONSTANTS[_dotted(node)])
        raise Unsupported(f"attribute .{node.attr}")

    def call(self, node: ast.Call) -> Node:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _INPLACE and _dotted(func.value) not in _NAMESPACES:
            return self.inplace(node)
        layout = layout_call(self, node)
        if layout is not None:
            return layout
        if not isinstance(func, ast.Attribute):
            raise Unsupported(f"call of {ast.unparse(func)}")
        base = _dotted(func.value)
        name = func.attr
        if base == "self" and name in self.facts.submodules:
            sub = self.facts.submodules[name]
            if sub.kind == "Embedding" and len(node.args) == 1 and not node.keywords:
                return Node("embedding", (self.expr(node.args[0]), Node("param", name=f"{name}.weight")),
                            (("padding_idx", const(sub.padding_idx)),))
            if sub.kind != "Linear" or len(node.args) != 1 or node.keywords:
                raise Unsupported(f"submodule self.{name} ({sub.kind})")
            bias = Node("param", name=f"{name}.bias") if sub.has_bias else const(None)
            return Node("linear", (self.expr(node.args[0]),),
                        (("weight", Node("param", name=f"{name}.weight")), ("bias", bias)))
        if base in _NAMESPACES:
            operands: list[ast.AST] = list(node.args)
        else:  # a tensor method: the receiver is the first operand
            if name in _CASTS:
                return self.expr(func.value)
            if name in _RESHAPES:
                return self.reshape(func.value, node)
            operands = [func.value, *node.args]
        if name in _DESUGARED:
            return _DESUGARED[name](self, node, operands)
        if name not in _OPS:
            raise Unsupported(f"{base + '.' if base in _NAMESPACES else 'Tensor.'}{name}")
        op, arity, positional = _OPS[name]
        if len(operands) > arity + len(positional):
            raise Unsupported(f"{name}: too many arguments")
        args = tuple(self.expr(a) for a in operands[:arity])
        kw = {key: self.kwvalue(v) for key, v in zip(positional, operands[arity:])}
        for keyword in node.keywords:
            if keyword.arg is None:
                raise Unsupported(f"{name}(**...)")
            kw[keyword.arg] = self.kwvalue(keyword.value)
        if op == "addmm":  # beta * C + alpha * (A @ B)
            beta, alpha = kw.get("beta", const(1.0)), kw.get("alpha", const(1.0))
            return Node("add", (Node("mul", (beta, args[0])), Node("mul", (alpha, Node("matmul", args[1:])))))
        if op == "add" and "alpha" in kw:
            return Node("add", (args[0], Node("mul", (kw["alpha"], args[1]))))
        return Node(op, args, tuple(sorted(kw.items())))

    def run_method(self, node: ast.Call) -> None:
        """``self.step(w, g, ...)`` as a statement: the method's in-place updates of its parameters are
        updates of the forward arguments passed for them."""
        fn = self.methods[_dotted(node.func)[5:]]
        params = [a.arg for a in fn.args.args[1:]]
        if node.keywords or len(node.args) != len(params) or fn.args.vararg or fn.args.kwarg:
            raise Unsupported(f"line {node.lineno}: call of self.{fn.name}")
        passed = [a.id for a in node.args if isinstance(a, ast.Name) and a.id in self.facts.forward_args]
        if len(passed) != len(set(passed)):
            raise Unsupported(f"line {node.lineno}: one argument passed twice to self.{fn.name}")
        bound = {p: self.expr(a) for p, a in zip(params, node.args)}
        aliases = {p: a.id for p, a in zip(params, node.args)
                   if isinstance(a, ast.Name) and a.id in self.facts.forward_args}
        saved = self.env, self.aliases, self.outer
        self.env, self.aliases, self.outer = bound, aliases, saved[0]
        try:
            for stmt in fn.body:
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                    continue  # docstring
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                    self.env[stmt.targets[0].id] = self.expr(stmt.value)
                elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) \
                        and _inplace_root(stmt.value) is not None:
                    self.expr(stmt.value)
                else:
                    raise Unsupported(f"line {stmt.lineno}: {type(stmt).__name__} in self.{fn.name}")
        finally:
            self.env, self.aliases, self.outer = saved

    def inplace(self, node: ast.Call) -> Node:
        """``t.add_(u, alpha=a)`` and the like: the new value; when ``t`` is a forward argument (directly or
        through a chain of in-place calls), it is that argument's value from here on."""
        func = node.func
        assert isinstance(func, ast.Attribute)
        receiver = self.expr(func.value)
        names, build = _INPLACE[func.attr]
        args = _arguments(self, node, list(node.args), names, {})
        value = build(receiver, args)
        root = _inplace_root(func.value)
        if root is not None:
            target = self.aliases.get(root) if self.outer is not None else root
            if target is None or target not in self.facts.forward_args or self.depth:
                raise Unsupported(f"line {node.lineno}: in-place update of {root}, not a forward argument")
            self.env[root] = value
            if self.outer is not None:  # in a helper method: forward sees the argument's new value too
                self.outer[target] = value
            if target not in self.mutated:
                self.mutated.append(target)
        return value

    def reshape(self, receiver: ast.AST, node: ast.Call) -> Node:
        """``x.view(-1, x.size(-1))`` and the like: a ``reshape`` node whose ``shape`` keyword holds the
        sizes (constants where literal, opaque otherwise), so a template can tell a flattening of the
        leading dimensions from any other reshape."""
        if node.keywords:
            raise Unsupported("reshape with keywords")
        sizes = node.args[0].elts if len(node.args) == 1 and isinstance(node.args[0], (ast.Tuple, ast.List)) \
            else node.args
        shape = tuple(_size_of(a) for a in sizes)
        return Node("reshape", (self.expr(receiver),), (("shape", const(shape)),))

    def kwvalue(self, node: ast.AST) -> Node:
        try:
            return self.expr(node)
        except Unsupported:
            return Node("opaque", name=ast.unparse(node))


# ------------------------------------------------------------------------- layout ops of model graphs
# Column views, broadcasts, gathers and concatenations: what RoPE, gated activations and attention
# references are written with (``x1, x2 = x.chunk(2, dim=-1)``, ``x[..., 0::2]``, ``cos[:, None, :]``,
# ``cache[positions]``, ``torch.cat([...], dim=-1)``, ``F.scaled_dot_product_attention``), and module-level
# helper functions (``rotate_half``) inlined where called. Node ops:
#   cols(x)          value ("chunk", i, n): part i of n equal parts of the last dimension;
#                    value ("every", start, step): the columns start, start + step, ...
#   unsqueeze(x)     value: the dimension inserted
#   gather(t, idx)   t[idx] along dimension 0
#   cat(a, b, ...)   kw dim; interleave(a, b): stack([a, b], dim=-1).flatten(-2)
#   transpose(x)     value (d0, d1); sdpa(q, k, v) kw is_causal, scale, enable_gqa, attn_mask
#   tuple(a, b, ...) a helper function's tuple result, unpacked by the caller

_INLINE_DEPTH = 8
_MATH_CONSTANTS = {"math.pi": math.pi, "math.e": math.e, "math.inf": math.inf}
_MATH_FUNCTIONS = {"sqrt": math.sqrt, "log": math.log, "exp": math.exp, "log2": math.log2, "tanh": math.tanh}


def _module_functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name not in ("get_inputs",
                                                                                               "get_init_inputs")}


def _last_dim(reader: _Reader, node: ast.AST | None) -> bool:
    if node is None:
        return False
    value = reader.expr(node)
    return value.op == "const" and value.value == -1


def _keyword(node: ast.Call, name: str, position: int) -> ast.AST | None:
    for kw in node.keywords:
        if kw.arg == name:
            return kw.value
    return node.args[position] if len(node.args) > position else None


def unpack(reader: _Reader, target: ast.Tuple, value: ast.AST) -> dict[str, Node]:
    """``a, b = ...``: a tuple of expressions, a last-dimension ``chunk``, or a helper's tuple result."""
    names = []
    for elt in target.elts:
        if not isinstance(elt, ast.Name):
            raise Unsupported(f"line {target.lineno}: unpacking into {ast.unparse(elt)}")
        names.append(elt.id)
    if isinstance(value, (ast.Tuple, ast.List)):
        if len(value.elts) != len(names):
            raise Unsupported(f"line {target.lineno}: unpacking {len(value.elts)} values into {len(names)}")
        return dict(zip(names, [reader.expr(e) for e in value.elts]))
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "chunk":
        method = _dotted(value.func.value) not in _NAMESPACES
        source = value.func.value if method else (value.args[0] if value.args else None)
        rest = value.args if method else value.args[1:]
        parts = rest[0] if rest else None
        dim = next((kw.value for kw in value.keywords if kw.arg == "dim"), rest[1] if len(rest) > 1 else None)
        if source is None or not (isinstance(parts, ast.Constant) and parts.value == len(names)) \
                or not _last_dim(reader, dim):
            raise Unsupported(f"line {target.lineno}: chunk other than into equal parts of the last dimension")
        base = reader.expr(source)
        return {n: Node("cols", (base,), value=("chunk", i, len(names))) for i, n in enumerate(names)}
    result = reader.expr(value)
    if result.op != "tuple" or len(result.args) != len(names):
        raise Unsupported(f"line {target.lineno}: unpacking {ast.unparse(value)}")
    return dict(zip(names, result.args))


def subscript(reader: _Reader, node: ast.Subscript) -> Node:
    """``x[..., 0::2]`` (columns), ``t[:, None, :]`` (broadcast dimensions), ``table[idx]`` (a gather)."""
    base = reader.expr(node.value)
    index = node.slice
    elts = list(index.elts) if isinstance(index, ast.Tuple) else [index]

    def is_full(e: ast.AST) -> bool:
        return isinstance(e, ast.Slice) and e.lower is None and e.upper is None and e.step is None

    def is_none(e: ast.AST) -> bool:
        return isinstance(e, ast.Constant) and e.value is None

    def is_ellipsis(e: ast.AST) -> bool:
        return isinstance(e, ast.Constant) and e.value is Ellipsis

    if len(elts) == 2 and is_ellipsis(elts[0]) and isinstance(elts[1], ast.Slice) and elts[1].upper is None \
            and elts[1].step is not None:
        start = reader.expr(elts[1].lower) if elts[1].lower is not None else const(0)
        step = reader.expr(elts[1].step)
        if start.op == "const" and step.op == "const" and isinstance(step.value, int) and 0 <= start.value < step.value:
            return Node("cols", (base,), value=("every", start.value, step.value))
    if len(elts) == 2 and is_ellipsis(elts[0]) and isinstance(elts[1], ast.Slice) and elts[1].step is None:
        half = _half_of(node.value, elts[1])  # x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
        if half is not None:
            return Node("cols", (base,), value=("chunk", half, 2))
    if all(is_full(e) or is_none(e) or is_ellipsis(e) for e in elts) and sum(map(is_ellipsis, elts)) <= 1 \
            and any(map(is_none, elts)):
        split = next((i for i, e in enumerate(elts) if is_ellipsis(e)), len(elts))
        head, tail = elts[:split], elts[split + 1:]
        out = base
        for i, e in enumerate(head):
            if is_none(e):
                out = Node("unsqueeze", (out,), value=i)
        for i, e in enumerate(tail):
            if is_none(e):
                out = Node("unsqueeze", (out,), value=i - len(tail))
        return out
    if not isinstance(index, (ast.Tuple, ast.Slice)) and not is_none(index) and not is_ellipsis(index):
        idx = reader.expr(index)
        if idx.op == "input":
            return Node("gather", (base, idx))
    raise Unsupported(f"line {node.lineno}: indexing {ast.unparse(node)}")


def _half_of(tensor: ast.AST, piece: ast.Slice) -> int | None:
    """0 or 1 when ``piece`` is the first or second half of ``tensor``'s last dimension."""
    def is_half(e: ast.AST | None) -> bool:
        return isinstance(e, ast.BinOp) and isinstance(e.op, ast.FloorDiv) and isinstance(e.right, ast.Constant) \
            and e.right.value == 2 and ast.unparse(e.left) in (f"{ast.unparse(tensor)}.shape[-1]",
                                                                f"{ast.unparse(tensor)}.size(-1)")
    if piece.lower is None and is_half(piece.upper):
        return 0
    if piece.upper is None and is_half(piece.lower):
        return 1
    return None


def layout_call(reader: _Reader, node: ast.Call) -> Node | None:
    """Helper functions (inlined) and the layout ops above; ``None`` for any other call."""
    func = node.func
    if isinstance(func, ast.Name):
        fn = reader.functions.get(func.id)
        if fn is None:
            return None
        return _inline(reader, fn, node)
    if not isinstance(func, ast.Attribute):
        return None
    name = func.attr
    namespace = _dotted(func.value) in _NAMESPACES
    if _dotted(func.value) == "math" and name in _MATH_FUNCTIONS and len(node.args) == 1 and not node.keywords:
        arg = _fold(reader.expr(node.args[0]))
        if arg.op == "const" and isinstance(arg.value, (int, float)):
            return const(_MATH_FUNCTIONS[name](arg.value))
        if name in ("sqrt", "log", "exp", "tanh") and all(leaf.op in ("scalar", "const") for leaf in arg.leaves()):
            return Node(name, (arg,))  # of number attributes: a number, computed where it is used
        raise Unsupported(f"line {node.lineno}: math.{name} of a tensor")
    if name in ("cat", "concat", "concatenate", "stack") and namespace:
        seq = node.args[0] if node.args else None
        if not isinstance(seq, (ast.List, ast.Tuple)) or not _last_dim(reader, _keyword(node, "dim", 1)):
            raise Unsupported(f"line {node.lineno}: {name} other than of a list along the last dimension")
        return Node("cat" if name != "stack" else "stack", tuple(reader.expr(e) for e in seq.elts),
                    (("dim", const(-1)),))
    if name == "flatten" and not namespace:
        inner = reader.expr(func.value)
        start = reader.expr(node.args[0]) if node.args else const(0)
        if inner.op == "stack" and len(inner.args) == 2 and start.op == "const" and start.value == -2:
            return Node("interleave", inner.args)
        raise Unsupported(f"line {node.lineno}: flatten")
    if name == "unsqueeze":
        source = func.value if not namespace else (node.args[0] if node.args else None)
        dim = _keyword(node, "dim", 0 if not namespace else 1)
        value = reader.expr(dim) if dim is not None else None
        if source is None or value is None or value.op != "const" or not isinstance(value.value, int):
            raise Unsupported(f"line {node.lineno}: unsqueeze")
        return Node("unsqueeze", (reader.expr(source),), value=value.value)
    if name in ("transpose", "swapaxes") and not namespace and len(node.args) == 2:
        dims = tuple(reader.expr(a) for a in node.args)
        if any(d.op != "const" for d in dims):
            raise Unsupported(f"line {node.lineno}: transpose")
        return Node("transpose", (reader.expr(func.value),), value=tuple(d.value for d in dims))
    if name == "bmm" and namespace and len(node.args) == 2 and not node.keywords:
        return Node("matmul", (reader.expr(node.args[0]), reader.expr(node.args[1])))
    if name == "glu" and namespace:
        x = reader.expr(node.args[0])
        dim = _keyword(node, "dim", 1)
        if dim is not None and not _last_dim(reader, dim):
            raise Unsupported(f"line {node.lineno}: glu other than over the last dimension")
        return Node("mul", (Node("cols", (x,), value=("chunk", 0, 2)),
                            Node("sigmoid", (Node("cols", (x,), value=("chunk", 1, 2)),))))
    if name == "scaled_dot_product_attention" and namespace:
        names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
        given: dict[str, Node] = {}
        for key, arg in zip(names, node.args):
            given[key] = reader.expr(arg)
        for kw in node.keywords:
            if kw.arg not in names:
                raise Unsupported(f"line {node.lineno}: scaled_dot_product_attention({kw.arg}=...)")
            given[kw.arg] = reader.kwvalue(kw.value)
        qkv = tuple(given.pop(k, None) for k in names[:3])
        if any(t is None for t in qkv):
            raise Unsupported(f"line {node.lineno}: scaled_dot_product_attention without q, k, v")
        return Node("sdpa", qkv, tuple(sorted(given.items())))  # type: ignore[arg-type]
    return None


def _fold(node: Node) -> Node:
    """Arithmetic on numbers evaluated (``2.0 * math.pi`` for ``math.sqrt``); anything else as it is."""
    ops = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
           "div": lambda a, b: a / b, "pow": lambda a, b: a ** b}
    args = tuple(_fold(a) for a in node.args)
    if not args or node.kw or any(a.op != "const" or not isinstance(a.value, (int, float)) for a in args):
        return node
    if node.op == "neg":
        return const(-args[0].value)
    if node.op in ops and len(args) == 2:
        return const(ops[node.op](args[0].value, args[1].value))
    return node


def _inline(reader: _Reader, fn: ast.FunctionDef, node: ast.Call) -> Node:
    """A module-level helper read as the expression it returns, its parameters bound to the call's arguments."""
    if reader.depth >= _INLINE_DEPTH or fn.args.vararg or fn.args.kwarg or fn.args.kwonlyargs:
        raise Unsupported(f"line {node.lineno}: call of {fn.name}")
    params = [a.arg for a in fn.args.args]
    defaults = dict(zip(params[len(params) - len(fn.args.defaults):], fn.args.defaults))
    bound: dict[str, Node] = {}
    for p, arg in zip(params, node.args):
        bound[p] = reader.expr(arg)
    for kw in node.keywords:
        if kw.arg not in params:
            raise Unsupported(f"line {node.lineno}: {fn.name}({kw.arg}=...)")
        bound[kw.arg] = reader.expr(kw.value)
    for p in params:
        if p not in bound:
            if p not in defaults:
                raise Unsupported(f"line {node.lineno}: {fn.name} without {p}")
            bound[p] = reader.expr(defaults[p])
    saved = reader.env
    reader.env, reader.depth = bound, reader.depth + 1
    try:
        result = reader.forward(fn)
    finally:
        reader.env, reader.depth = saved, reader.depth - 1
    return result[0] if len(result) == 1 else Node("tuple", result)


# ------------------------------------------------------------------------------------ reshapes and casts

_RESHAPES = {"view", "reshape", "flatten"}


def _size_of(node: ast.AST) -> int | str:
    """A reshape size: an int where literal, ``"last"`` for ``t.size(-1)`` / ``t.shape[-1]``, else its text."""
    try:
        value = ast.literal_eval(node)
        if isinstance(value, int):
            return value
    except (ValueError, SyntaxError, TypeError):
        pass
    text = ast.unparse(node).replace(" ", "")
    if text.endswith((".size(-1)", ".shape[-1]")):
        return "last"
    return text


def flattens_rows(node: Node, vector: bool = False) -> Node | None:
    """The tensor under ``node`` when ``node`` views it as rows over its last dimension
    (``x.view(-1, x.size(-1))``, ``x.reshape(-1, V)``) or, ``vector``, as one flat vector (``t.view(-1)``)."""
    if node.op != "reshape":
        return None
    shape = node.const("shape", ())
    if vector:
        return node.args[0] if shape == (-1,) else None
    # (-1, V) with V a name (``self.vocab_size``, ``V``) is taken as the last dimension; a literal is not
    if len(shape) == 2 and shape[0] == -1 and isinstance(shape[1], str):
        return node.args[0]
    return None


_FLOAT32 = {"torch.float32", "torch.float"}


def float32_upcast_calls(source: str, callee: str) -> bool:
    """Whether every call of ``callee`` (e.g. ``cross_entropy``) in ``Model.forward`` gets its first
    argument cast to float32 (``x.float()``, ``x.to(torch.float32)``,
    ``x.to(torch.promote_types(x.dtype, torch.float32))``), directly or through a local name.

    The tree ``read_model`` gives reads casts as the identity; a template whose output dtype follows its
    input's asks this to know when the reference returns float32 for 16-bit inputs.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    forward = next((n for n in getattr(model, "body", []) if isinstance(n, ast.FunctionDef) and n.name == "forward"),
                   None)
    if forward is None:
        return False
    env: dict[str, ast.AST] = {}
    found = []
    for stmt in forward.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            env[stmt.targets[0].id] = stmt.value
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)) and node.args and \
                    (getattr(node.func, "attr", None) or getattr(node.func, "id", None)) == callee:
                found.append(_upcast(node.args[0], env))
    return bool(found) and all(found)


def _upcast(node: ast.AST, env: dict[str, ast.AST], depth: int = 0) -> bool:
    if depth > 16:
        return False
    if isinstance(node, ast.Name) and node.id in env:
        return _upcast(env[node.id], env, depth + 1)
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    name = node.func.attr
    if name == "float":
        return True
    if name == "log_softmax":  # nll_loss(log_softmax(x.float())): the cast is inside
        inner = node.func.value if not node.args or _dotted(node.func.value) not in _NAMESPACES else node.args[0]
        return _upcast(inner, env, depth + 1)
    if name == "to":
        targets = list(node.args) + [k.value for k in node.keywords if k.arg == "dtype"]
        for t in targets:
            text = ast.unparse(t).replace(" ", "")
            if text in _FLOAT32 or (text.startswith("torch.promote_types(") and text.endswith(",torch.float32)")):
                return True
    if name in _CASTS or name in _RESHAPES:
        return _upcast(node.func.value, env, depth + 1)
    return False


def _embedding_module(name: str, call: ast.Call) -> Submodule:
    """``nn.Embedding(num, dim, padding_idx=p)``: its ``padding_idx`` when a literal (else none known)."""
    pad = None
    for kw in call.keywords:
        if kw.arg == "padding_idx":
            try:
                pad = ast.literal_eval(kw.value)
            except (ValueError, SyntaxError, TypeError):
                pad = None
    if len(call.args) >= 3:
        try:
            pad = ast.literal_eval(call.args[2])
        except (ValueError, SyntaxError, TypeError):
            pad = None
    return Submodule(name, "Embedding", has_bias=False, padding_idx=pad if isinstance(pad, int) else None)


# ------------------------------------------------------------------------- losses and statistics
# Pointwise losses are read as the elementwise chain they are, then the reduction their ``reduction``
# keyword names (``F.mse_loss(a, b)`` reads as ``mean(square(a - b))``), so the templates that
# implement chains and reductions implement them too; row statistics read as their own nodes
# (``var``/``std`` with ``dim``, ``correction``, ``keepdim``; ``argmax``/``argmin``), and
# ``torch.linalg.vector_norm(x, dim=d)`` as ``sqrt(sum(square(x), dim=d))``.


def _arguments(reader: _Reader, node: ast.Call, operands: list[ast.AST], names: tuple[str, ...],
               defaults: dict[str, Any]) -> dict[str, Node]:
    """The call's arguments by name (positionals after the receiver in ``names`` order), every one
    read as a node; names outside ``names`` are refused."""
    out: dict[str, Node] = {}
    if len(operands) > len(names):
        raise Unsupported(f"line {node.lineno}: too many arguments")
    for key, arg in zip(names, operands):
        out[key] = reader.expr(arg)
    for kw in node.keywords:
        if kw.arg not in names:
            raise Unsupported(f"line {node.lineno}: {ast.unparse(node.func)}({kw.arg}=...)")
        out[kw.arg] = reader.expr(kw.value)
    for key, value in defaults.items():
        out.setdefault(key, const(value))
    return out


def _number(value: Node) -> bool:
    return value.op == "scalar" or (value.op == "const" and isinstance(value.value, (int, float))
                                    and not isinstance(value.value, bool))


def _reduced(chain: Node, reduction: Node, line: int) -> Node:
    if reduction.op != "const" or reduction.value not in ("mean", "sum", "none"):
        raise Unsupported(f"line {line}: reduction {reduction.value!r}")
    return chain if reduction.value == "none" else Node(reduction.value, (chain,))


def _loss(chain_of: Any, names: tuple[str, ...], defaults: dict[str, Any] | None = None):
    """A reader for ``F.<loss>(input, target, ...)`` (``names``: its parameters in order);
    ``chain_of(a, b, args, line)`` gives the per-element loss. Weighted forms are not read."""
    def read(reader: _Reader, node: ast.Call, operands: list[ast.AST]) -> Node:
        args = _arguments(reader, node, operands, names, {"reduction": "mean", "size_average": None,
                                                          "reduce": None, "weight": None, **(defaults or {})})
        plain = all(args[k].op == "const" and args[k].value is None for k in ("size_average", "reduce", "weight"))
        if not plain or "input" not in args or "target" not in args:
            raise Unsupported(f"line {node.lineno}: a loss with size_average/reduce/weight or without its tensors")
        return _reduced(chain_of(args["input"], args["target"], args, node.lineno), args["reduction"], node.lineno)

    return read


def _mse(a: Node, b: Node, args: dict[str, Node], line: int) -> Node:
    return Node("square", (Node("sub", (a, b)),))


def _l1(a: Node, b: Node, args: dict[str, Node], line: int) -> Node:
    return Node("abs", (Node("sub", (a, b)),))


def _huber_of(d: Node, delta: Node) -> Node:
    """``0.5 d²`` below ``delta``, ``delta (|d| - delta / 2)`` above, as ``c (|d| - c / 2)`` with
    ``c = min(|d|, delta)``: one branch-free expression whose derivative is the loss's own."""
    ad = Node("abs", (d,))
    c = Node("clamp", (ad,), (("max", delta), ("min", const(None))))
    return Node("mul", (c, Node("sub", (ad, Node("mul", (const(0.5), c))))))


def _huber(a: Node, b: Node, args: dict[str, Node], line: int) -> Node:
    if not _number(args["delta"]):
        raise Unsupported(f"line {line}: huber_loss delta")
    return _huber_of(Node("sub", (a, b)), args["delta"])


def _smooth_l1(a: Node, b: Node, args: dict[str, Node], line: int) -> Node:
    beta = args["beta"]
    if beta.op == "const" and beta.value == 0:
        return _l1(a, b, args, line)
    if beta.op != "const" or not _number(beta) or beta.value < 0:
        raise Unsupported(f"line {line}: smooth_l1_loss beta")
    return Node("div", (_huber_of(Node("sub", (a, b)), beta), beta))


def _bce_with_logits(a: Node, b: Node, args: dict[str, Node], line: int) -> Node:
    if args["pos_weight"].op != "const" or args["pos_weight"].value is not None:
        raise Unsupported(f"line {line}: binary_cross_entropy_with_logits with weights")
    # max(x, 0) - x t + log(1 + e^-|x|): never overflows, and its derivative is sigmoid(x) - t
    tail = Node("log1p", (Node("exp", (Node("neg", (Node("abs", (a,)),)),)),))
    return Node("add", (Node("sub", (Node("relu", (a,)), Node("mul", (a, b)))), tail))


def _statistic(op: str):
    def read(reader: _Reader, node: ast.Call, operands: list[ast.AST]) -> Node:
        args = _arguments(reader, node, operands, ("input", "dim", "unbiased", "keepdim", "correction"),
                          {"keepdim": False})
        if "input" not in args or "dim" not in args:
            raise Unsupported(f"line {node.lineno}: {op} without dim")
        correction = 1
        if "correction" in args:
            correction = args["correction"].value
        elif "unbiased" in args:
            correction = 1 if args["unbiased"].value else 0
        if not isinstance(correction, int) or isinstance(correction, bool):
            raise Unsupported(f"line {node.lineno}: {op} correction")
        return Node(op, (args["input"],), (("correction", const(correction)), ("dim", args["dim"]),
                                           ("keepdim", args["keepdim"])))

    return read


def _arg_extreme(op: str):
    def read(reader: _Reader, node: ast.Call, operands: list[ast.AST]) -> Node:
        args = _arguments(reader, node, operands, ("input", "dim", "keepdim"), {"keepdim": False})
        if "input" not in args or "dim" not in args or args["dim"].op != "const" or args["dim"].value is None:
            raise Unsupported(f"line {node.lineno}: {op} without dim")
        return Node(op, (args["input"],), (("dim", args["dim"]), ("keepdim", args["keepdim"])))

    return read


def _vector_norm(reader: _Reader, node: ast.Call, operands: list[ast.AST]) -> Node:
    args = _arguments(reader, node, operands, ("x", "ord", "dim", "keepdim", "dtype"),
                      {"ord": 2, "keepdim": False, "dtype": None})
    if "x" not in args or "dim" not in args or args["ord"].value not in (2, 2.0) or args["dtype"].value is not None:
        raise Unsupported(f"line {node.lineno}: vector_norm other than the 2-norm over a dim")
    total = Node("sum", (Node("square", (args["x"],)),), (("dim", args["dim"]), ("keepdim", args["keepdim"])))
    return Node("sqrt", (total,))


def _where(reader: _Reader, node: ast.Call, operands: list[ast.AST]) -> Node:
    """``torch.where(c, x, y)``; as a method ``x.where(c, y)`` the receiver is the first branch."""
    method = _dotted(node.func.value) not in _NAMESPACES if isinstance(node.func, ast.Attribute) else False
    args = _arguments(reader, node, operands, ("input", "condition", "other") if method else
                      ("condition", "input", "other"), {})
    if set(args) != {"condition", "input", "other"}:
        raise Unsupported(f"line {node.lineno}: where without its three operands")
    return Node("where", (args["condition"], args["input"], args["other"]))


def _masked_fill(reader: _Reader, node: ast.Call, operands: list[ast.AST]) -> Node:
    args = _arguments(reader, node, operands, ("input", "mask", "value"), {})
    if set(args) != {"input", "mask", "value"}:
        raise Unsupported(f"line {node.lineno}: masked_fill without its operands")
    return Node("where", (args["mask"], args["value"], args["input"]))


def _normalize(reader: _Reader, node: ast.Call, operands: list[ast.AST]) -> Node:
    """``F.normalize(x, p=2, dim=d, eps=e)``: ``x / max(sqrt(sum(x², d, keepdim)), e)``, as PyTorch computes it."""
    args = _arguments(reader, node, operands, ("input", "p", "dim", "eps", "out"),
                      {"p": 2.0, "dim": 1, "eps": 1e-12, "out": None})
    if "input" not in args or args["p"].value not in (2, 2.0) or args["out"].value is not None \
            or not _number(args["eps"]):
        raise Unsupported(f"line {node.lineno}: normalize other than the 2-norm")
    x = args["input"]
    total = Node("sum", (Node("square", (x,)),), (("dim", args["dim"]), ("keepdim", const(True))))
    return Node("div", (x, Node("clamp", (Node("sqrt", (total,)),), (("max", const(None)), ("min", args["eps"])))))


_LOSS_ARGS = ("input", "target", "size_average", "reduce", "reduction", "weight")
_DESUGARED = {
    "mse_loss": _loss(_mse, _LOSS_ARGS), "l1_loss": _loss(_l1, _LOSS_ARGS),
    "huber_loss": _loss(_huber, ("input", "target", "reduction", "delta", "weight"), {"delta": 1.0}),
    "smooth_l1_loss": _loss(_smooth_l1, ("input", "target", "size_average", "reduce", "reduction", "beta"),
                            {"beta": 1.0}),
    "binary_cross_entropy_with_logits": _loss(_bce_with_logits, ("input", "target", "weight", "size_average",
                                                                 "reduce", "reduction", "pos_weight"),
                                              {"pos_weight": None}),
    "var": _statistic("var"), "std": _statistic("std"),
    "argmax": _arg_extreme("argmax"), "argmin": _arg_extreme("argmin"),
    "vector_norm": _vector_norm, "where": _where, "masked_fill": _masked_fill, "normalize": _normalize,
}


# ------------------------------------------------------------------------- in-place updates
# An optimizer step is a sequence of in-place updates of its arguments (``exp_avg.mul_(b1).add_(g,
# alpha=1 - b1)``); each reads as the out-of-place expression it computes, and the argument takes that
# value (``ReferenceModel.mutations``). In-place calls on temporaries (``v.sqrt().add_(eps)``) are the
# plain expressions.


def _get(args: dict[str, Node], key: str, default: Any = None) -> Node:
    if key in args:
        return args[key]
    if default is None:
        raise Unsupported(f"an in-place update without {key}")
    return const(default)


def _scaled(scale: Node, value: Node) -> Node:
    return value if scale.op == "const" and scale.value == 1 else Node("mul", (scale, value))


_INPLACE: dict[str, tuple[tuple[str, ...], Any]] = {
    "add_": (("other", "alpha"), lambda x, a: Node("add", (x, _scaled(_get(a, "alpha", 1), _get(a, "other"))))),
    "sub_": (("other", "alpha"), lambda x, a: Node("sub", (x, _scaled(_get(a, "alpha", 1), _get(a, "other"))))),
    "mul_": (("other",), lambda x, a: Node("mul", (x, _get(a, "other")))),
    "div_": (("other",), lambda x, a: Node("div", (x, _get(a, "other")))),
    "addcmul_": (("tensor1", "tensor2", "value"), lambda x, a: Node("add", (x, _scaled(
        _get(a, "value", 1), Node("mul", (_get(a, "tensor1"), _get(a, "tensor2"))))))),
    "addcdiv_": (("tensor1", "tensor2", "value"), lambda x, a: Node("add", (x, _scaled(
        _get(a, "value", 1), Node("div", (_get(a, "tensor1"), _get(a, "tensor2"))))))),
    "lerp_": (("end", "weight"), lambda x, a: Node("add", (x, Node("mul", (
        _get(a, "weight"), Node("sub", (_get(a, "end"), x))))))),
    "copy_": (("src",), lambda x, a: _get(a, "src")),
    "sqrt_": ((), lambda x, a: Node("sqrt", (x,))),
    "neg_": ((), lambda x, a: Node("neg", (x,))),
}


def _inplace_root(node: ast.AST) -> str | None:
    """The name an in-place call updates: ``t`` in ``t.mul_(a).add_(b)``; None for temporaries."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _INPLACE:
        return _inplace_root(node.func.value)
    return None
