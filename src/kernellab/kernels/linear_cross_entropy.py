"""Linear layer + cross-entropy without the full logits: ``F.cross_entropy(F.linear(x, W), t)`` (also
``x @ W.t()``, ``self.lm_head(x)`` without bias, a float32 upcast of the logits, ``ignore_index``,
label smoothing; reduction mean or sum), forward and backward, memory-bounded as Liger-Kernel's.

The tokens are taken ``CHUNK_TOKENS`` at a time: a Triton matmul writes the chunk's fp32 logits
(chunk × V), one cross-entropy kernel computes each row's loss and, in the same launch, overwrites
nothing of the input but writes dlogits = softmax - onehot (scaled for the mean) in the operands'
dtype; two more matmuls give the chunk's dx = dlogits @ W and add dlogits^T @ x to an fp32 dW.
Gradients are therefore computed in the forward (one pass over W per product) and the backward only
scales them by the incoming gradient. Peak extra memory: chunk × V × (4 + elem) bytes + V × H × 4.

Budget per call, T tokens, H hidden, V vocabulary:
  FLOPs: 2·T·H·V (logits) + 4·T·H·V with gradients (dx, dW), + about 6·T·V for the loss and dlogits.
  Bytes: W is read once per chunk and product (3·⌈T/chunk⌉·V·H·elem with gradients), x once per
  product, the chunk's logits written and read twice (fp32) and dlogits written once and read twice;
  dW (fp32) read and written once per chunk after the first.
"""

from __future__ import annotations

from kernellab.kernels.cross_entropy import (
    CE_FUSED_KERNELS,
    CE_KERNELS,
    CE_SCALED_HOST,
    loss_options,
)
from kernellab.kernels.reference_model import (
    Node,
    ReferenceModel,
    flattens_rows,
    float32_upcast_calls,
)
from kernellab.kernels.template import (
    KnobSpec,
    Match,
    Template,
    assemble,
    register_template,
)
from kernellab.tasks.model import Task

KNOBS = [
    KnobSpec("CHUNK_TOKENS", 1024, "16..8192", "tokens whose logits exist at once (memory bound: chunk x V fp32)"),
    KnobSpec("BLOCK_M", 128, "16..256", "matmul output rows per tile (16-bit operands)"),
    KnobSpec("BLOCK_N", 128, "16..256", "matmul output columns per tile (16-bit operands)"),
    KnobSpec("BLOCK_K", 64, "16..128", "matmul K step (16-bit operands)"),
    KnobSpec("NUM_WARPS", 8, "2,4,8", "matmul warps (16-bit operands)"),
    KnobSpec("NUM_STAGES", 3, "2,3,4,5", "matmul pipelining stages (16-bit operands)"),
    KnobSpec("BLOCK_M_F32", 64, "16..256", "matmul output rows per tile (float32 operands)"),
    KnobSpec("BLOCK_N_F32", 64, "16..256", "matmul output columns per tile (float32 operands)"),
    KnobSpec("BLOCK_K_F32", 32, "16..128", "matmul K step (float32 operands)"),
    KnobSpec("GROUP_M", 8, "1..16", "tile rows sharing operand panels in L2 (grouped order)"),
    KnobSpec("CE_CHUNK", 4096, "256..16384", "columns per step of the per-row loss and gradient kernel"),
    KnobSpec("CE_WARPS", 8, "1,2,4,8,16", "warps of the per-row loss and gradient kernel"),
]


def _linear(node: Node, model: ReferenceModel) -> tuple[str, str] | None:
    """(x, weight) of ``F.linear(x, W)`` / ``x @ W.t()`` / ``self.lm_head(x)``, no bias, W a 2-D parameter."""
    if node.op == "linear":
        x, weight, bias = node.args[0], node.kwarg("weight"), node.kwarg("bias")
        if bias is not None and not (bias.op == "const" and bias.value is None):
            return None
    elif node.op == "matmul" and node.args[1].op == "t":
        x, weight = node.args[0], node.args[1].args[0]
    else:
        return None
    param = model.param(weight) if weight is not None else None
    if x.op != "input" or param is None or param.ndim not in (2, None):
        return None
    return x.name, weight.name


@register_template("linear_cross_entropy")
class LinearCrossEntropyTemplate(Template):
    categories = frozenset({"losses", "fusion"})
    budget = __doc__

    def match(self, task: Task, model: ReferenceModel) -> Match | None:
        if len(model.outputs) != 1:
            return None
        out = model.outputs[0]
        options = loss_options(out)
        if options is None or options["reduction"] == "none":
            return None
        logits, targets = out.args
        flattened = flattens_rows(logits)
        found = _linear(flattened if flattened is not None else logits, model)
        targets = flattens_rows(targets, vector=True) or targets
        if found is None or targets.op != "input":
            return None
        x, weight = found
        if task.backward and (targets.name in task.grad_inputs or
                              any(name != x for name in task.grad_inputs)):
            return None
        spec = {**options, "x": x, "weight": weight, "targets": targets.name, "backward": task.backward,
                "upcast": float32_upcast_calls(model.source, "cross_entropy"), "flattened": flattened is not None,
                "ieee": task.fp32_precision != "tf32"}
        return Match(self, task, model, spec,
                     summary=f"linear + cross-entropy ({options['reduction']}) chunked over tokens, "
                             f"{'forward + backward' if task.backward else 'forward'}")

    def knobs(self, match: Match) -> list[KnobSpec]:
        return KNOBS

    def presets(self, match: Match) -> list[dict[str, int]]:
        return [{"CHUNK_TOKENS": 2048, "BLOCK_N": 256}, {"CHUNK_TOKENS": 512, "BLOCK_M": 64, "NUM_WARPS": 4}]

    def render(self, match: Match, params: dict[str, int]) -> str:
        spec = match.spec
        doc = f"Template `linear_cross_entropy` for {match.task.id}: {match.summary}.\n\n" + \
            (__doc__ or "").split("\n\n", 1)[1]
        imports = ""
        return assemble(doc, match, params, CE_KERNELS + CE_FUSED_KERNELS + LCE_KERNELS, LCE_HOST + CE_SCALED_HOST, _forward_body(spec), imports)


def _scalar(value, kind: str) -> str:
    return f"{kind}({value})" if isinstance(value, str) else repr(value)


def _forward_body(spec: dict) -> str:
    x, t = spec["x"], spec["targets"]
    dtype = f"torch.promote_types({x}.dtype, torch.float32)" if spec["upcast"] else f"{x}.dtype"
    flat = "" if spec["flattened"] else \
        f"if {x}.dim() != 2:\n    raise ValueError('cross_entropy of unflattened logits: classes would be dimension 1')\n"
    return (f"{flat}return _LinearCrossEntropy.apply({x}, self.{spec['weight']}, {t}, {spec['reduction']!r}, "
            f"{_scalar(spec['ignore_index'], 'int')}, {_scalar(spec['smoothing'], 'float')}, {dtype}, "
            f"{'True' if spec['ieee'] else 'False'})")


LCE_KERNELS = '''
@triton.jit
def _mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
               ACCUMULATE: tl.constexpr, OP_DTYPE: tl.constexpr, PRECISION: tl.constexpr, BLOCK_M: tl.constexpr,
               BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # c (+)= a @ b for any strides (transposed views included), fp32 accumulation, grouped tile order
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * tiles_n
    first_m = (pid // group) * GROUP_M
    size_m = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % size_m
    pid_n = (pid % group) // size_m
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_rows = a_ptr + rm.to(tl.int64)[:, None] * stride_am
    b_cols = b_ptr + rn.to(tl.int64)[None, :] * stride_bn
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + rk
        a = tl.load(a_rows + kk.to(tl.int64)[None, :] * stride_ak, mask=(rm < M)[:, None] & (kk < K)[None, :],
                    other=0.0).to(OP_DTYPE)
        b = tl.load(b_cols + kk.to(tl.int64)[:, None] * stride_bk, mask=(kk < K)[:, None] & (rn < N)[None, :],
                    other=0.0).to(OP_DTYPE)
        acc = tl.dot(a, b, acc=acc, input_precision=PRECISION)
    offs = rm.to(tl.int64)[:, None] * stride_cm + rn.to(tl.int64)[None, :] * stride_cn
    mask = (rm < M)[:, None] & (rn < N)[None, :]
    if ACCUMULATE:
        acc += tl.load(c_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(c_ptr + offs, acc.to(c_ptr.dtype.element_ty), mask=mask)
'''

LCE_HOST = '''
_TL = {torch.float16: tl.float16, torch.bfloat16: tl.bfloat16, torch.float32: tl.float32}


def _mm(a, b, c, accumulate, op, ieee):
    """c (+)= a @ b (2-D views, any strides) with the template's tiles for the operand dtype."""
    M, K = a.shape
    N = b.shape[1]
    if M == 0 or N == 0:
        return
    if op == tl.float32:
        bm, bn, bk, warps, stages = BLOCK_M_F32, BLOCK_N_F32, BLOCK_K_F32, 4, 2
        precision = "ieee" if ieee else "tf32"
    else:
        bm, bn, bk, warps, stages = BLOCK_M, BLOCK_N, BLOCK_K, NUM_WARPS, NUM_STAGES
        precision = "tf32"
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    _mm_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                     ACCUMULATE=accumulate, OP_DTYPE=op, PRECISION=precision, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                     GROUP_M=GROUP_M, num_warps=warps, num_stages=stages)


def _lce_forward(x, weight, targets, reduction, ignore_index, smoothing, out_dtype, ieee, grad):
    """(loss, dx, dW in fp32) of cross_entropy(x @ W^T, targets), the logits a chunk of tokens at a time."""
    x2 = x.contiguous().view(-1, x.shape[-1])
    w = weight.contiguous()
    t = targets.contiguous().view(-1)
    n_rows, hidden = x2.shape
    vocab = w.shape[0]
    op = _TL[torch.promote_types(x.dtype, w.dtype)]
    count = torch.empty((), dtype=torch.float32, device=x.device)
    block = min(4096, max(16, triton.next_power_of_2(n_rows)))
    _count_kernel[(1,)](t, count, n_rows, ignore_index, BLOCK=block, num_warps=4)
    rows_loss = torch.empty(n_rows, dtype=torch.float32, device=x.device)
    dx = torch.empty_like(x2) if grad else None
    dw = torch.empty((vocab, hidden), dtype=torch.float32, device=x.device) if grad and n_rows else None
    if grad and dw is None:
        dw = torch.zeros((vocab, hidden), dtype=torch.float32, device=x.device)
    chunk = max(1, min(CHUNK_TOKENS, n_rows))
    logits = torch.empty((chunk, vocab), dtype=torch.float32, device=x.device)
    dz = torch.empty((chunk, vocab), dtype=x.dtype, device=x.device) if grad else logits
    block_c = min(CE_CHUNK, max(16, triton.next_power_of_2(vocab)))
    for start in range(0, n_rows, chunk):
        m = min(chunk, n_rows - start)
        xc = x2[start:start + m]
        _mm(xc, w.t(), logits[:m], False, op, ieee)
        _ce_fused_kernel[(m,)](logits, t[start:start + m], rows_loss[start:start + m], dz, count, vocab,
                               ignore_index, smoothing, GRAD=grad, MEAN=reduction == "mean",
                               SMOOTH=smoothing != 0.0, BLOCK_C=block_c, num_warps=CE_WARPS)
        if grad:
            _mm(dz[:m], w, dx[start:start + m], False, op, ieee)
            _mm(dz[:m].t(), xc, dw, start > 0, op, ieee)
    loss = torch.empty((), dtype=out_dtype, device=x.device)
    _ce_reduce_kernel[(1,)](rows_loss, t, loss, count, n_rows, ignore_index, MEAN=reduction == "mean",
                            BLOCK=block, num_warps=4)
    return loss, dx, dw


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, targets, reduction, ignore_index, smoothing, out_dtype, ieee):
        grad = ctx.needs_input_grad[0] or ctx.needs_input_grad[1]
        loss, dx, dw = _lce_forward(x, weight, targets, reduction, ignore_index, smoothing, out_dtype, ieee, grad)
        if grad:
            ctx.save_for_backward(dx, dw)
        ctx.shapes = (x.shape, weight.dtype)
        return loss

    @staticmethod
    def backward(ctx, grad):
        dx, dw = ctx.saved_tensors
        x_shape, w_dtype = ctx.shapes
        g = grad.contiguous()
        dx = _scaled(dx, g, dx.dtype).view(x_shape) if ctx.needs_input_grad[0] else None
        dw = _scaled(dw, g, w_dtype) if ctx.needs_input_grad[1] else None
        return dx, dw, None, None, None, None, None, None
'''
