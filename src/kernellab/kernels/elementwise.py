"""Elementwise chains: any tree of activations and arithmetic over same-shape inputs, per-last-dim
parameter vectors and Python-number attributes, in one pass (``relu(x)``, ``gelu(x + bias)``,
``residual + gelu(x + bias)``, ``silu(x * weight + bias)``...).

Budget per call, for ``E`` output elements, ``I`` same-shape inputs, ``P`` parameter vectors of ``N``
(the last dimension), ``f`` FLOPs per element of the chain (``triton_expr.FLOPS``):
  forward   reads I·E·elem (+ P·N·elem, cached), writes E·elem; f·E FLOPs.
  backward  reads (I + 1)·E·elem, writes one E·elem gradient per differentiated input; about 2·f·E
            FLOPs (the chain again, then its derivative). With parameter gradients the backward runs
            over G row groups and writes G·N fp32 partials per parameter, which a second kernel sums
            per column (deterministic: no atomics).
"""

from __future__ import annotations

from collections.abc import Callable

from kernellab.kernels.reference_model import Node, ReferenceModel
from kernellab.kernels.template import (
    COLUMN_SUM,
    COLUMN_SUM_HOST,
    KnobSpec,
    Match,
    Template,
    assemble,
    autograd_op,
    register_template,
)
from kernellab.kernels.triton_expr import (
    NotElementwise,
    TritonExpr,
    flops_per_element,
    helper_source,
    is_elementwise,
)
from kernellab.tasks.model import Task

KNOBS = [
    KnobSpec("BLOCK", 1024, "256..8192", "elements per program of the flat kernels"),
    KnobSpec("NUM_WARPS", 4, "1,2,4,8,16", "warps per program of the flat kernels"),
    KnobSpec("BLOCK_N", 512, "64..4096", "columns per program of the parameter-gradient backward"),
    KnobSpec("ROW_GROUPS", 256, "16..1024", "row groups of the parameter-gradient backward (fp32 partials)"),
]


def leaves_of(node: Node) -> tuple[list[str], list[str], list[str]]:
    """Input, parameter and scalar names a tree reads, in first-use order."""
    found: dict[str, list[str]] = {"input": [], "param": [], "scalar": []}
    for n in node.walk():
        bucket = found.get(n.op)
        if bucket is not None and n.name not in bucket:
            bucket.append(n.name)
    return found["input"], found["param"], found["scalar"]


def vector_params_only(model: ReferenceModel) -> Callable[[Node], bool]:
    """Leaves an elementwise kernel can read: inputs, scalars and 1-D (per-last-dim) parameters."""
    def ok(leaf: Node) -> bool:
        if leaf.op == "param":
            param = model.params.get(leaf.name)
            return param is not None and param.ndim == 1
        return leaf.op in ("input", "scalar")

    return ok


def py(name: str) -> str:
    """A Python identifier for a leaf name (``linear.bias`` -> ``linear_bias``)."""
    return name.replace(".", "_")


def kernel_leaf(node: Node) -> str:
    return {"input": "x_", "param": "p_", "scalar": "s_"}[node.op] + py(node.name)


@register_template("elementwise")
class ElementwiseTemplate(Template):
    categories = frozenset({"elementwise", "fusion", "gated_mlp", "indexing"})
    budget = __doc__

    def match(self, task: Task, model: ReferenceModel) -> Match | None:
        if len(model.outputs) != 1:
            return None
        out = model.outputs[0]
        if not is_elementwise(out, vector_params_only(model)):
            return None
        inputs, params, scalars = leaves_of(out)
        names = [*inputs, *map(py, params), *scalars]
        if not inputs or len(set(names)) != len(names) or len({model.input_ranks.get(n) for n in inputs} - {None}) > 1:
            return None
        wrt = []
        if task.backward:
            wrt = [Node("input", name=n) for n in inputs if n in task.grad_inputs] + \
                [Node("param", name=p) for p in params]
            try:  # every derivative must be expressible
                probe = TritonExpr(kernel_leaf)
                for w in wrt:
                    probe.grad(out, w)
            except NotElementwise:
                return None
        what = "forward + backward" if task.backward else "forward"
        return Match(self, task, model, {"out": out, "inputs": inputs, "params": params, "scalars": scalars,
                                         "wrt": wrt, "flops": flops_per_element(out)},
                     summary=f"one-pass elementwise chain over {', '.join(inputs)}, {what}")

    def knobs(self, match: Match) -> list[KnobSpec]:
        return KNOBS if any(w.op == "param" for w in match.spec["wrt"]) else KNOBS[:2]

    def presets(self, match: Match) -> list[dict[str, int]]:
        return [{"BLOCK": 2048, "NUM_WARPS": 8}, {"BLOCK": 4096, "NUM_WARPS": 8}]

    def render(self, match: Match, params: dict[str, int]) -> str:
        chain = _Chain(match)
        kernels = chain.forward_kernel()
        host = chain.forward_host()
        if chain.wrt:
            kernels += chain.backward_kernel()
            host += chain.backward_host()
            forward_body = f"return _Op.apply({chain.call_args()})"
        else:
            forward_body = f"return _forward({chain.call_args()})"
        doc = (f"Template `elementwise` for {match.task.id}: {match.summary}.\n\n"
               + (__doc__ or "").split("\n\n", 1)[1])
        return assemble(doc, match, params, helper_source(chain.helpers) + kernels, host, forward_body)


class _Chain:
    """The rendering of one match: names, loads, kernels and host functions."""

    def __init__(self, match: Match):
        spec = match.spec
        self.out: Node = spec["out"]
        self.inputs: list[str] = spec["inputs"]
        self.params: list[str] = spec["params"]
        self.scalars: list[str] = spec["scalars"]
        self.wrt: list[Node] = spec["wrt"]
        self.flops: int = spec["flops"]
        self.input_grads = [w.name for w in self.wrt if w.op == "input"]
        self.param_grads = [w.name for w in self.wrt if w.op == "param"]
        self.helpers: set[str] = set()
        self.tensors = [*self.inputs, *map(py, self.params)]  # host-side names, in kernel order

    # ------------------------------------------------------------------------------------ names

    def call_args(self) -> str:
        return ", ".join([*self.inputs, *(f"self.{p}" for p in self.params), *(f"float(self.{s})" for s in self.scalars)])

    def ptr_params(self) -> str:
        return ", ".join([*(f"x_{n}_ptr" for n in self.inputs), *(f"p_{py(n)}_ptr" for n in self.params)])

    def scalar_params(self) -> str:
        return "".join(f", s_{s}" for s in self.scalars)

    def host_scalars(self) -> str:
        return "".join(f", {s}" for s in self.scalars)

    def load_inputs(self, offs: str, mask: str, indent: str) -> str:
        return "\n".join(f"{indent}x_{n} = tl.load(x_{n}_ptr + {offs}, mask={mask}, other=1.0).to(tl.float32)"
                         for n in self.inputs)

    def loads(self, offs: str, mask: str, cols: str, indent: str) -> str:
        return "\n".join(p for p in (self.load_inputs(offs, mask, indent), self.load_params(cols, mask, indent)) if p)

    def load_params(self, cols: str, mask: str, indent: str) -> str:
        return "\n".join(f"{indent}p_{py(n)} = tl.load(p_{py(n)}_ptr + {cols}, mask={mask}, other=1.0).to(tl.float32)"
                         for n in self.params)

    # ------------------------------------------------------------------------------------ forward

    def forward_kernel(self) -> str:
        expr = TritonExpr(kernel_leaf)
        result = expr.value(self.out)
        self.helpers |= expr.helpers
        cols = "    cols = offs % n_cols\n" if self.params else ""
        return f'''
@triton.jit
def _forward_kernel({self.ptr_params()}, y_ptr, n_elements, n_cols{self.scalar_params()}, BLOCK: tl.constexpr):
    # reads each input once (parameters by column, cached), writes y once; FLOPs per element: {self.flops}
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
{cols}{self.loads("offs", "mask", "cols", "    ")}
{expr.code()}
    tl.store(y_ptr + offs, ({result}).to(y_ptr.dtype.element_ty), mask=mask)
'''

    def forward_host(self) -> str:
        first = self.inputs[0]
        contiguous = "".join(f"    {n} = {n}.contiguous()\n" for n in self.tensors)
        dtype = f"{self.tensors[0]}.dtype"
        for t in self.tensors[1:]:
            dtype = f"torch.promote_types({dtype}, {t}.dtype)"
        return f'''
def _forward({", ".join(self.tensors)}{self.host_scalars()}):
{contiguous}    out_ = torch.empty({first}.shape, dtype={dtype}, device={first}.device)  # not ``y``: an input may be
    n = out_.numel()
    if n:
        n_cols = out_.shape[-1] if out_.dim() else 1
        _forward_kernel[(triton.cdiv(n, BLOCK),)]({", ".join(self.tensors)}, out_, n, n_cols{self.host_scalars()},
                                                  BLOCK=BLOCK, num_warps=NUM_WARPS)
    return out_
'''

    # ------------------------------------------------------------------------------------ backward

    def backward_kernel(self) -> str:
        expr = TritonExpr(kernel_leaf)
        grads = {w: expr.grad(self.out, w) or "0.0" for w in self.wrt}
        self.helpers |= expr.helpers
        dx_ptrs = "".join(f", dx_{n}_ptr" for n in self.input_grads)
        if not self.param_grads:
            stores = "\n".join(f"    tl.store(dx_{w.name}_ptr + offs, (dy * {grads[w]}).to(dx_{w.name}_ptr.dtype.element_ty), "
                               f"mask=mask)" for w in self.wrt)
            cols = "    cols = offs % n_cols\n" if self.params else ""
            return f'''
@triton.jit
def _backward_kernel(dy_ptr, {self.ptr_params()}{dx_ptrs}, n_elements, n_cols{self.scalar_params()},
                     BLOCK: tl.constexpr):
    # reads dy and each input once, writes one gradient per differentiated input
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
{cols}    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
{self.loads("offs", "mask", "cols", "    ")}
{expr.code()}
{stores}
'''
        dp_ptrs = "".join(f", dp_{py(n)}_ptr" for n in self.param_grads)
        input_stores = "\n".join(f"        tl.store(dx_{w.name}_ptr + offs, (dy * {grads[w]}).to(dx_{w.name}_ptr.dtype"
                                 f".element_ty), mask=cmask)" for w in self.wrt if w.op == "input")
        accs = "\n".join(f"    acc_{py(n)} = tl.zeros([BLOCK_N], dtype=tl.float32)" for n in self.param_grads)
        adds = "\n".join(f"        acc_{py(w.name)} += tl.where(cmask, dy * {grads[w]}, 0.0)"
                         for w in self.wrt if w.op == "param")
        part_stores = "\n".join(f"    tl.store(dp_{py(n)}_ptr + g * n_cols + cols, acc_{py(n)}, mask=cmask)"
                                for n in self.param_grads)
        body = "\n".join("    " + line for line in expr.code().split("\n"))
        return f'''
@triton.jit
def _backward_kernel(dy_ptr, {self.ptr_params()}{dx_ptrs}{dp_ptrs}, n_rows, n_cols{self.scalar_params()},
                     BLOCK_N: tl.constexpr):
    # program (g, c): rows g, g + G, ... of column block c; reads dy and the inputs once, writes the
    # input gradients and a [G, n_cols] fp32 partial per parameter gradient
    g = tl.program_id(0)
    groups = tl.num_programs(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = cols < n_cols
{self.load_params("cols", "cmask", "    ")}
{accs}
    for row in range(g, n_rows, groups):
        offs = tl.cast(row, tl.int64) * n_cols + cols
        dy = tl.load(dy_ptr + offs, mask=cmask, other=0.0).to(tl.float32)
{self.load_inputs("offs", "cmask", "        ")}
{body}
{input_stores}
{adds}
{part_stores}
''' + COLUMN_SUM

    def backward_host(self) -> str:
        allocs = "".join(f"    dx_{n} = torch.empty_like({n})\n" for n in self.input_grads)
        allocs += "".join(f"    dp_{py(n)} = torch.empty_like({py(n)})\n" for n in self.param_grads)
        dx_args = "".join(f", dx_{n}" for n in self.input_grads)
        if not self.param_grads:
            launch = f'''    n = dy.numel()
    if n:
        n_cols = dy.shape[-1] if dy.dim() else 1
        _backward_kernel[(triton.cdiv(n, BLOCK),)](dy, {", ".join(self.tensors)}{dx_args}, n, n_cols{self.host_scalars()},
                                                   BLOCK=BLOCK, num_warps=NUM_WARPS)
'''
        else:
            parts = "".join(f"    part_{py(n)} = torch.empty((groups, n_cols), dtype=torch.float32, device=dy.device)\n"
                            for n in self.param_grads)
            part_args = "".join(f", part_{py(n)}" for n in self.param_grads)
            sums = "".join(f"    _column_sum(part_{py(n)}, dp_{py(n)})\n" for n in self.param_grads)
            launch = f'''    n_cols = dy.shape[-1] if dy.dim() else 1
    n_rows = dy.numel() // max(n_cols, 1)
    groups = min(n_rows, ROW_GROUPS)
{parts}    if groups and n_cols:
        _backward_kernel[(groups, triton.cdiv(n_cols, BLOCK_N))](
            dy, {", ".join(self.tensors)}{dx_args}{part_args}, n_rows, n_cols{self.host_scalars()},
            BLOCK_N=BLOCK_N, num_warps=4)
{sums}'''
        returns = [f"dx_{n}" if n in self.input_grads else "None" for n in self.inputs]
        returns += [f"dp_{py(n)}" for n in self.params] + ["None"] * len(self.scalars)
        tensors = ", ".join(self.tensors)
        return f'''
def _backward(dy, {tensors}{self.host_scalars()}):
    dy = dy.contiguous()
{allocs}{launch}    return {", ".join(returns)}
''' + (COLUMN_SUM_HOST if self.param_grads else "") + autograd_op(self.tensors, self.host_scalars(), self.scalars)
