"""Whole-tensor reductions: ``sum`` or ``mean`` of every element of an elementwise chain over
same-shape inputs and number attributes, forward and backward. Pointwise losses are these chains
(the reader writes ``F.mse_loss(a, b)`` as ``mean(square(a - b))``, Huber, smooth-L1, L1 and
binary cross-entropy with logits likewise), and so is ``x.sum()``.

Budget per call, ``E`` elements, ``I`` inputs, ``f`` FLOPs per element of the chain:
  forward   reads I·E·elem once, writes one value; (f + 1)·E FLOPs. P = min(cdiv(E, BLOCK),
            MAX_PROGRAMS) programs each stride over the tensor keeping a BLOCK-wide fp32 accumulator and
            write one fp32 partial; one more program sums the P partials in a fixed order (deterministic,
            no atomics). When one program covers everything it writes the result itself (one launch).
  backward  reads the incoming gradient (one value) and I·E·elem, writes one E·elem gradient per
            differentiated input; about 2·f·E FLOPs.
"""

from __future__ import annotations

from kernellab.kernels.elementwise import kernel_leaf, leaves_of
from kernellab.kernels.reference_model import Node, ReferenceModel
from kernellab.kernels.template import KnobSpec, Match, Template, assemble, register_template
from kernellab.kernels.triton_expr import (
    NotElementwise,
    TritonExpr,
    flops_per_element,
    helper_source,
    is_elementwise,
)
from kernellab.tasks.model import Task

KNOBS = [
    KnobSpec("BLOCK", 4096, "256..16384", "elements per step of each program"),
    KnobSpec("NUM_WARPS", 8, "1,2,4,8,16", "warps per program"),
    KnobSpec("MAX_PROGRAMS", 1024, "64..4096", "most programs of the partial-sum pass"),
]


def _inputs_and_scalars(leaf: Node) -> bool:
    return leaf.op in ("input", "scalar")


@register_template("full_reduction")
class FullReductionTemplate(Template):
    categories = frozenset({"reductions", "losses", "fusion"})
    budget = __doc__

    def match(self, task: Task, model: ReferenceModel) -> Match | None:
        if len(model.outputs) != 1:
            return None
        out = model.outputs[0]
        if out.op not in ("sum", "mean") or len(out.args) != 1 or out.kw:  # no dim: every element
            return None
        chain = out.args[0]
        if not is_elementwise(chain, _inputs_and_scalars):
            return None
        inputs, _, scalars = leaves_of(chain)
        if not inputs or len({model.input_ranks.get(n) for n in inputs} - {None}) > 1:
            return None
        wrt = []
        if task.backward:
            wrt = [n for n in inputs if n in task.grad_inputs]
            if not wrt:
                return None
            try:
                probe = TritonExpr(kernel_leaf)
                for name in wrt:
                    probe.grad(chain, Node("input", name=name))
            except NotElementwise:
                return None
        what = "forward + backward" if wrt else "forward"
        return Match(self, task, model, {"kind": out.op, "chain": chain, "inputs": inputs, "scalars": scalars,
                                         "wrt": wrt, "flops": flops_per_element(chain)},
                     summary=f"{out.op} of every element of a chain over {', '.join(inputs)}, {what}")

    def knobs(self, match: Match) -> list[KnobSpec]:
        return KNOBS

    def presets(self, match: Match) -> list[dict[str, int]]:
        return [{"BLOCK": 8192, "NUM_WARPS": 16}, {"BLOCK": 2048, "NUM_WARPS": 4, "MAX_PROGRAMS": 2048}]

    def render(self, match: Match, params: dict[str, int]) -> str:
        spec = match.spec
        chain, inputs, scalars, wrt = spec["chain"], spec["inputs"], spec["scalars"], spec["wrt"]
        ptrs = ", ".join(f"x_{n}_ptr" for n in inputs)
        sargs = "".join(f", s_{s}" for s in scalars)
        hargs = "".join(f", {s}" for s in scalars)
        tensors = ", ".join(inputs)

        def loads(indent: str) -> str:
            return "\n".join(f"{indent}x_{n} = tl.load(x_{n}_ptr + offs, mask=mask, other=0.0).to(tl.float32)"
                             for n in inputs)

        expr = TritonExpr(kernel_leaf, indent="        ")
        z = expr.value(chain)
        helpers = set(expr.helpers)
        kernels = f'''
@triton.jit
def _partial_kernel({ptrs}, part_ptr, out_ptr, n_elements, scale{sargs}, BLOCK: tl.constexpr,
                    FINAL: tl.constexpr):
    # program p strides over blocks p, p + P, ...: reads each input once, writes one fp32 partial (or,
    # FINAL, the result when it is the only program); FLOPs per element: {spec["flops"]} + 1
    pid = tl.program_id(0)
    step = tl.num_programs(0).to(tl.int64) * BLOCK
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(pid.to(tl.int64) * BLOCK, n_elements, step):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n_elements
{loads("        ")}
{expr.code()}
        acc += tl.where(mask, {z}, 0.0)
    total = tl.sum(acc, axis=0)
    if FINAL:
        tl.store(out_ptr, (total * scale).to(out_ptr.dtype.element_ty))
    else:
        tl.store(part_ptr + pid, total)


@triton.jit
def _finish_kernel(part_ptr, out_ptr, n_parts, scale, BLOCK: tl.constexpr):
    # the partials in a fixed order: deterministic
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_parts, BLOCK):
        idx = start + tl.arange(0, BLOCK)
        acc += tl.load(part_ptr + idx, mask=idx < n_parts, other=0.0)
    tl.store(out_ptr, (tl.sum(acc, axis=0) * scale).to(out_ptr.dtype.element_ty))
'''
        dtype = f"{inputs[0]}.dtype"
        for n in inputs[1:]:
            dtype = f"torch.promote_types({dtype}, {n}.dtype)"
        scale = "1.0 / n_" if spec["kind"] == "mean" else "1.0"
        same_shape = "".join(f"    if {n}.shape != {inputs[0]}.shape:\n        raise ValueError('full_reduction: "
                             f"inputs of different shapes')\n" for n in inputs[1:])
        contiguous = "".join(f"    {n} = {n}.contiguous()\n" for n in inputs)
        host = f'''
def _programs(n):
    return max(1, min(triton.cdiv(n, BLOCK), MAX_PROGRAMS))


def _reduce({tensors}{hargs}):
{same_shape}{contiguous}    out_ = torch.empty((), dtype={dtype}, device={inputs[0]}.device)  # names with _: inputs may be named out, n...
    n_ = {inputs[0]}.numel()
    scale_ = {scale} if n_ else float("nan")
    programs_ = _programs(n_)
    part_ = torch.empty(programs_, dtype=torch.float32, device=out_.device)
    _partial_kernel[(programs_,)]({tensors}, part_, out_, n_, scale_{hargs}, BLOCK=BLOCK, FINAL=programs_ == 1,
                                  num_warps=NUM_WARPS)
    if programs_ > 1:
        _finish_kernel[(1,)](part_, out_, programs_, scale_, BLOCK=1024, num_warps=4)
    return out_
'''
        args = ", ".join([*inputs, *(f"float(self.{s})" for s in scalars)])
        body = f"return _reduce({args})"
        if wrt:
            grad = TritonExpr(kernel_leaf)
            grads = {n: grad.grad(chain, Node("input", name=n)) or "0.0" for n in wrt}
            helpers |= grad.helpers
            dx_ptrs = "".join(f", dx_{n}_ptr" for n in wrt)
            stores = "\n".join(f"    tl.store(dx_{n}_ptr + offs, (g * {grads[n]}).to(dx_{n}_ptr.dtype.element_ty), "
                               f"mask=mask)" for n in wrt)
            kernels += f'''

@triton.jit
def _backward_kernel(dy_ptr, {ptrs}{dx_ptrs}, n_elements, scale{sargs}, BLOCK: tl.constexpr):
    # the one incoming gradient times the chain's derivative: reads each input once, writes each gradient once
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    g = tl.load(dy_ptr).to(tl.float32) * scale
{loads("    ")}
{grad.code()}
{stores}
'''
            allocs = "".join(f"        dx_{n} = torch.empty_like({n})\n" for n in wrt)
            returns = ", ".join([*(f"dx_{n}" if n in wrt else "None" for n in inputs), *("None" for _ in scalars)])
            host += f'''

class _Reduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, {tensors}{hargs}):
        out_ = _reduce({tensors}{hargs})
        ctx.save_for_backward({tensors}{"," if len(inputs) == 1 else ""})
        ctx.scalars = ({"".join(s + ", " for s in scalars)})
        return out_

    @staticmethod
    def backward(ctx, dy):
        {tensors}{"," if len(inputs) == 1 else ""} = [t_.contiguous() for t_ in ctx.saved_tensors]
        n_ = {inputs[0]}.numel()
{allocs}        if n_:
            _backward_kernel[(triton.cdiv(n_, BLOCK),)](dy.contiguous(), {tensors}{"".join(f", dx_{n}" for n in wrt)},
                                                       n_, {scale}, *ctx.scalars, BLOCK=BLOCK, num_warps=NUM_WARPS)
        return {returns}
'''
            body = f"return _Reduce.apply({args})"
        doc = f"Template `full_reduction` for {match.task.id}: {match.summary}.\n\n" + \
            (__doc__ or "").split("\n\n", 1)[1]
        return assemble(doc, match, params, helper_source(helpers) + kernels, host, body)
