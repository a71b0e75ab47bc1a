"""Gated activations and other column-view chains: an elementwise chain over parts of the last
dimension of its inputs, e.g. ``gate, up = x.chunk(2, -1); silu(gate) * up`` (SwiGLU/GeGLU/ReGLU of a
fused gate/up projection), ``F.glu(x)``, interleaved ``x[..., 0::2]`` / ``x[..., 1::2]`` halves (the
clamped SwiGLU of gpt-oss), and outputs concatenated along the last dimension (``torch.cat([d_gate,
d_up], -1)``, a gated activation's backward written as its own op). One pass, one launch.

Budget per call, ``E`` output elements (per concatenated part), ``I`` input elements in all, ``f``
FLOPs per element of the chain(s):
  forward   reads I·elem once, writes E·elem per output part; f·E FLOPs.
  backward  reads I·elem + E·elem (dy), writes I·elem (one gradient element per input element,
            zeros where the output does not depend on it); about 2·f·E FLOPs.
"""

from __future__ import annotations

from kernellab.kernels.reference_model import Node, ReferenceModel
from kernellab.kernels.template import (
    KnobSpec,
    Match,
    Template,
    assemble,
    autograd_op,
    register_template,
)
from kernellab.kernels.triton_expr import (
    ELEMENTWISE,
    NotElementwise,
    TritonExpr,
    flops_per_element,
    helper_source,
    is_elementwise,
)
from kernellab.tasks.model import Task

KNOBS = [
    KnobSpec("BLOCK", 1024, "256..8192", "output elements per program"),
    KnobSpec("NUM_WARPS", 4, "1,2,4,8,16", "warps per program"),
]


class _NotViews(Exception):
    pass


def push_views(node: Node) -> Node:
    """``cols`` moved down to the leaves: part of ``x + bias`` is part of ``x`` plus part of ``bias``."""
    if node.op == "cols":
        inner = node.args[0]
        if inner.op in ("input", "param"):
            return node
        if inner.op in ("const", "scalar"):
            return inner
        if inner.op == "cols":
            raise _NotViews("a view of a view")
        if inner.op not in ELEMENTWISE:
            raise _NotViews(inner.op)
        return push_views(Node(inner.op, tuple(Node("cols", (a,), value=node.value) for a in inner.args), inner.kw,
                               inner.name, inner.value))
    if not node.args:
        return node
    return Node(node.op, tuple(push_views(a) for a in node.args), node.kw, node.name, node.value)


class _Views:
    """Leaves of the normalised chains: plain tensors and column views, each with a kernel name."""

    def __init__(self, model: ReferenceModel):
        self.model = model
        self.leaves: dict[Node, str] = {}  # cols/input/param node -> kernel name
        self.kinds: dict[str, str] = {}  # tensor name -> "plain" | "chunk" | "every"
        self.parts: dict[str, int] = {}  # tensor name -> n (chunk) or step (every)

    def rename(self, node: Node) -> Node:
        """The tree with every view leaf replaced by a synthetic input leaf the emitter understands."""
        if node.op == "cols" or (node.op in ("input", "param") and not node.args):
            base, view = (node.args[0], node.value) if node.op == "cols" else (node, None)
            if base.op == "param":
                param = self.model.params.get(base.name)
                if param is None or param.ndim != 1:
                    raise _NotViews("a parameter that is not a vector")
            kind = "plain" if view is None else view[0]
            parts = 1 if view is None else view[2]
            key = f"{base.op}:{base.name}"
            if self.kinds.setdefault(key, kind) != kind or self.parts.setdefault(key, parts) != parts:
                raise _NotViews(f"{base.name} is read through different views")
            if node not in self.leaves:
                tag = "" if view is None else f"_{kind[0]}{view[1]}"
                self.leaves[node] = base.name.replace(".", "_") + tag
            return Node(base.op, name=self.leaves[node])
        if node.op == "scalar" or node.op == "const":
            return node
        return Node(node.op, tuple(self.rename(a) for a in node.args), node.kw, node.name, node.value)


@register_template("gated")
class GatedTemplate(Template):
    categories = frozenset({"gated_mlp", "elementwise", "fusion"})
    budget = __doc__

    def match(self, task: Task, model: ReferenceModel) -> Match | None:
        if len(model.outputs) != 1:
            return None
        out = model.outputs[0]
        parts = list(out.args) if out.op == "cat" else [out]
        views = _Views(model)
        try:
            parts = [views.rename(push_views(p)) for p in parts]
        except _NotViews:
            return None
        if out.op != "cat" and all(k == "plain" for k in views.kinds.values()):
            return None  # a plain elementwise chain: the elementwise template's

        def leaf_ok(leaf: Node) -> bool:
            return leaf.op in ("input", "param", "scalar")

        if not all(is_elementwise(p, leaf_ok) for p in parts):
            return None
        tensors = {}
        for node, kname in views.leaves.items():
            base, view = (node.args[0], node.value) if node.op == "cols" else (node, None)
            tensors.setdefault((base.op, base.name), []).append((kname, view))
        inputs = [n for (op, n) in tensors if op == "input"]
        params = [n for (op, n) in tensors if op == "param"]
        if not inputs:
            return None
        scalars = list(dict.fromkeys(n.name for p in parts for n in p.walk() if n.op == "scalar"))
        wrt: list[str] = []
        if task.backward:
            if len(parts) != 1 or params:
                return None
            wrt = [n for n in inputs if n in task.grad_inputs]
            probe = TritonExpr(lambda leaf: leaf.name)
            try:
                for name in wrt:
                    for kname, _ in tensors[("input", name)]:
                        probe.grad(parts[0], Node("input", name=kname))
            except NotElementwise:
                return None
        spec = {"parts": parts, "tensors": tensors, "inputs": inputs, "params": params, "scalars": scalars,
                "kinds": views.kinds, "n": views.parts, "wrt": wrt,
                "flops": sum(flops_per_element(p) for p in parts)}
        what = "forward + backward" if wrt else "forward"
        shape = f"{len(parts)} concatenated outputs" if len(parts) > 1 else "one output"
        return Match(self, task, model, spec, summary=f"one-pass chain over column views, {shape}, {what}")

    def knobs(self, match: Match) -> list[KnobSpec]:
        return KNOBS

    def presets(self, match: Match) -> list[dict[str, int]]:
        return [{"BLOCK": 2048, "NUM_WARPS": 8}, {"BLOCK": 4096, "NUM_WARPS": 8}]

    def render(self, match: Match, params: dict[str, int]) -> str:
        r = _Render(match.spec)
        kernels = r.forward_kernel() + (r.backward_kernel() if r.wrt else "")
        host = r.host()
        body = f"return _Op.apply({r.call_args()})" if r.wrt else f"return _forward({r.call_args()})"
        doc = f"Template `gated` for {match.task.id}: {match.summary}.\n\n" + (__doc__ or "").split("\n\n", 1)[1]
        return assemble(doc, match, params, helper_source(r.helpers) + kernels, host, body)


class _Render:
    def __init__(self, spec: dict):
        self.spec = spec
        self.parts: list[Node] = spec["parts"]
        self.tensors: dict[tuple[str, str], list] = spec["tensors"]
        self.inputs: list[str] = spec["inputs"]
        self.params: list[str] = spec["params"]
        self.scalars: list[str] = spec["scalars"]
        self.wrt: list[str] = spec["wrt"]
        self.helpers: set[str] = set()

    @staticmethod
    def py(name: str) -> str:
        return name.replace(".", "_")

    def host_names(self) -> list[str]:
        return [*self.inputs, *(self.py(p) for p in self.params)]

    def call_args(self) -> str:
        return ", ".join([*self.inputs, *(f"self.{p}" for p in self.params), *(f"float(self.{s})" for s in self.scalars)])

    def ptrs(self) -> str:
        return ", ".join(f"{self.py(n)}_ptr" for n in self.host_names())

    def scalar_params(self) -> str:
        return "".join(f", s_{s}" for s in self.scalars)

    def host_scalars(self) -> str:
        return "".join(f", {s}" for s in self.scalars)

    def column(self, view) -> str:
        """The column of a view's element ``j`` in its tensor's row."""
        if view is None:
            return "j"
        kind, first, n = view
        return f"{first} * n_out + j" if kind == "chunk" else f"{first} + {n} * j"

    def width(self, op: str, name: str) -> str:
        n = self.spec["n"][f"{op}:{name}"]
        return "n_out" if n == 1 else f"{n} * n_out"

    def loads(self) -> str:
        lines = []
        for (op, name), views in self.tensors.items():
            ptr = f"{self.py(name)}_ptr"
            row = f"row * ({self.width(op, name)}) + " if op == "input" else ""
            for kname, view in views:
                lines.append(f"    {'x' if op == 'input' else 'p'}_{kname} = tl.load({ptr} + {row}{self.column(view)}, "
                             f"mask=mask, other=1.0).to(tl.float32)")
        return "\n".join(lines)

    @staticmethod
    def leaf(node: Node) -> str:
        return {"input": "x_", "param": "p_", "scalar": "s_"}[node.op] + node.name

    def head(self) -> str:
        # a ROWS x BLOCK_C tile of (row, output column): no integer division per element
        return '''    row = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)[:, None]
    j = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)[None, :]
    mask = (row < n_rows) & (j < n_out)
'''

    def forward_kernel(self) -> str:
        expr = TritonExpr(self.leaf)
        results = [expr.value(p) for p in self.parts]
        self.helpers |= expr.helpers
        m = len(self.parts)
        stores = "\n".join(f"    tl.store(y_ptr + row * {m} * n_out + {c} * n_out + j, ({v}).to(y_ptr.dtype.element_ty), "
                           f"mask=mask)" for c, v in enumerate(results))
        return f'''
@triton.jit
def _forward_kernel({self.ptrs()}, y_ptr, n_rows, n_out{self.scalar_params()}, ROWS: tl.constexpr,
                    BLOCK_C: tl.constexpr):
    # one output element per lane of each of the {m} output part(s): reads every input element once,
    # writes each output element once; FLOPs per element: {self.spec["flops"]}
{self.head()}{self.loads()}
{expr.code()}
{stores}
'''

    def backward_kernel(self) -> str:
        expr = TritonExpr(self.leaf)
        out = self.parts[0]
        stores = []
        for name in self.wrt:
            kind = self.spec["kinds"][f"input:{name}"]
            n = self.spec["n"][f"input:{name}"]
            used = {view: kname for kname, view in self.tensors[("input", name)]}
            views = [None] if kind == "plain" else [(kind, i, n) for i in range(n)]
            for view in views:
                kname = used.get(view)
                g = expr.grad(out, Node("input", name=kname)) if kname is not None else None
                value = f"dy * {g}" if g is not None else "tl.zeros_like(dy)"
                stores.append(f"    tl.store(dx_{name}_ptr + row * ({self.width('input', name)}) + {self.column(view)}, "
                              f"({value}).to(dx_{name}_ptr.dtype.element_ty), mask=mask)")
        self.helpers |= expr.helpers
        dx = "".join(f", dx_{n}_ptr" for n in self.wrt)
        return f'''
@triton.jit
def _backward_kernel(dy_ptr, {self.ptrs()}{dx}, n_rows, n_out{self.scalar_params()}, ROWS: tl.constexpr,
                     BLOCK_C: tl.constexpr):
    # reads dy and the inputs once, writes every element of each input's gradient once
{self.head()}    dy = tl.load(dy_ptr + row * n_out + j, mask=mask, other=0.0).to(tl.float32)
{self.loads()}
{expr.code()}
''' + "\n".join(stores) + "\n"

    def host(self) -> str:
        names = self.host_names()
        first = self.inputs[0]
        n_first = self.spec["n"][f"input:{first}"]
        contiguous = "".join(f"    {n} = {n}.contiguous()\n" for n in names)
        dtype = f"{names[0]}.dtype"
        for t in names[1:]:
            dtype = f"torch.promote_types({dtype}, {t}.dtype)"
        m = len(self.parts)
        checks = "".join(
            f"    if {self.py(n)}.shape[-1] != {self.spec['n'][f'{op}:{n}']} * n_out:\n"
            f"        raise ValueError(f\"{n}: last dimension {{{self.py(n)}.shape[-1]}}, expected "
            f"{self.spec['n'][f'{op}:{n}']} x {{n_out}}\")\n"
            for (op, n) in self.tensors)
        text = f'''
def _forward({", ".join(names)}{self.host_scalars()}):
{contiguous}    n_out = {first}.shape[-1] // {n_first}
{checks}    y = torch.empty((*{first}.shape[:-1], {m} * n_out), dtype={dtype}, device={first}.device)
    if y.numel():
        n_rows = y.numel() // ({m} * n_out)
        rows, cols = _tile(n_out)
        _forward_kernel[(triton.cdiv(n_rows, rows), triton.cdiv(n_out, cols))](
            {", ".join(names)}, y, n_rows, n_out{self.host_scalars()}, ROWS=rows, BLOCK_C=cols, num_warps=NUM_WARPS)
    return y


def _tile(n_out):
    """BLOCK elements per program: whole short rows, several to a program; long rows in column blocks."""
    cols = min(triton.next_power_of_2(n_out), BLOCK)
    return BLOCK // cols, cols
'''
        if not self.wrt:
            return text
        allocs = "".join(f"    dx_{n} = torch.empty_like({n})\n" for n in self.wrt)
        dx = "".join(f", dx_{n}" for n in self.wrt)
        returns = [f"dx_{n}" if n in self.wrt else "None" for n in self.inputs] + ["None"] * len(self.scalars)
        tensors = ", ".join(names)
        return text + f'''

def _backward(dy, {tensors}{self.host_scalars()}):
    dy = dy.contiguous()
{contiguous}    n_out = dy.shape[-1]
{allocs}    if dy.numel():
        n_rows = dy.numel() // n_out
        rows, cols = _tile(n_out)
        _backward_kernel[(triton.cdiv(n_rows, rows), triton.cdiv(n_out, cols))](
            dy, {tensors}{dx}, n_rows, n_out{self.host_scalars()}, ROWS=rows, BLOCK_C=cols, num_warps=NUM_WARPS)
    return {", ".join(returns)}
''' + autograd_op(names, self.host_scalars(), self.scalars)
