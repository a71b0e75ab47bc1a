"""Cross-entropy of logits against integer targets, forward and backward, vocabularies up to 256K.

Matches ``F.cross_entropy(logits, targets)`` with ``reduction`` mean/sum/none, ``ignore_index`` and
``label_smoothing`` (no class weights), with the logits cast (``logits.float()``: the loss is then
float32) or viewed as rows (``logits.view(-1, logits.size(-1))``, ``targets.view(-1)``, as a model's
graph writes it). Logits of rank > 2 keep the class in dimension 1 (``[N, C, H, W]`` segmentation maps):
a row is then strided by ``H·W``.

Budget per call, ``M`` rows (tokens or pixels) of ``V`` classes:
  forward: reads the logits once (M·V·elem) with an online max and sum of exponentials, plus one
            gathered logit and one target per row; writes an fp32 logsumexp per row and the loss
            (M·4 bytes, and M·elem for ``reduction="none"``); about 4·M·V FLOPs (one exp per logit).
            Few rows of a huge vocabulary split each row over several programs; a second small kernel
            combines their (max, sum) pairs. A mean or sum is taken by one more program over the M
            per-row losses (deterministic, no atomics); a problem whose rows fit one program is done
            in a single launch.
  backward: reads the logits once and writes dlogits once (2·M·V·elem), one exp per logit; the
            gradient of a mean is scaled by 1 / (targets not ignored), counted in the forward.
  training (FUSED_GRAD, many rows, mean or sum): the forward's pass over a row writes its dlogits
            too (a second read of the row, from L2), so forward + backward moves 2·M·V·elem; the
            backward reads the incoming gradient (4 bytes to the host) and returns dlogits as they
            are when it is 1, else scales them (2·M·V·elem more).
"""

from __future__ import annotations

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

FORWARD_KNOBS = [
    KnobSpec("CHUNK", 4096, "512..16384", "columns per step of the forward's online pass"),
    KnobSpec("TILE", 4096, "512..16384", "elements per step of one forward program (short rows share one)"),
    KnobSpec("ELEMS_PER_WARP", 256, "64..2048", "forward warps = tile elements / this (1 to 16)"),
    KnobSpec("TARGET_PROGRAMS", 512, "64..4096", "split rows when fewer row programs than this would run"),
    KnobSpec("MIN_SEGMENT", 8192, "1024..65536", "fewest columns per row segment of a split row"),
]
BACKWARD_KNOBS = [
    KnobSpec("FUSED_GRAD", 1, "0,1", "training: dlogits written by the forward's pass (1) or by the backward (0)"),
    KnobSpec("FUSED_CHUNK", 4096, "512..16384", "columns per step of the fused loss + gradient kernel"),
    KnobSpec("FUSED_WARPS", 16, "2,4,8,16", "warps of the fused loss + gradient kernel"),
    KnobSpec("GRAD_TILE", 4096, "512..16384", "elements per program of the backward"),
    KnobSpec("GRAD_WARPS", 8, "1,2,4,8,16", "warps of the backward"),
]


def _value(node: Node | None, default, kind: type):
    """A keyword's Python value: a constant of ``kind``, ``self.<name>`` as a scalar, else ``...``."""
    if node is None:
        return default
    if node.op == "const" and isinstance(node.value, kind) and not isinstance(node.value, bool):
        return node.value
    if node.op == "const" and kind is float and isinstance(node.value, int) and not isinstance(node.value, bool):
        return float(node.value)
    if node.op == "scalar":
        return f"self.{node.name}"
    return ...


def _log_softmax_input(node: Node, model: ReferenceModel) -> Node | None:
    """x of ``F.log_softmax(x, dim=-1)`` (rows over the last dimension): nll_loss of it is cross-entropy."""
    if node.op != "log_softmax" or len(node.args) != 1:
        return None
    dim = node.const("dim", None)
    x = node.args[0]
    rank = model.input_ranks.get(x.name) if x.op == "input" else None
    return x if dim == -1 or (rank is not None and dim == rank - 1) or (dim == 1 and flattens_rows(x)) else None


def _operand(node: Node, vector: bool = False) -> Node:
    """``x.view(-1, x.size(-1))`` (``t.view(-1)`` for targets) reads as ``x``: the kernel views it as rows."""
    inner = flattens_rows(node, vector)
    return node if inner is None else inner


def loss_options(out: Node) -> dict | None:
    """Reduction, ignore_index and label smoothing of a ``cross_entropy`` node, or ``None`` when it uses
    something the kernels do not implement (class weights, the deprecated ``size_average``/``reduce``)."""
    if out.op not in ("cross_entropy", "nll_loss") or len(out.args) != 2:
        return None
    for key in ("weight", "size_average", "reduce"):
        node = out.kwarg(key)
        if node is not None and not (node.op == "const" and node.value is None):
            return None
    reduction = _value(out.kwarg("reduction"), "mean", str)
    ignore = _value(out.kwarg("ignore_index"), -100, int)
    smoothing = _value(out.kwarg("label_smoothing"), 0.0, float)
    if reduction not in ("mean", "sum", "none") or ignore is ... or smoothing is ...:
        return None
    return {"reduction": reduction, "ignore_index": ignore, "smoothing": smoothing}


@register_template("cross_entropy")
class CrossEntropyTemplate(Template):
    categories = frozenset({"losses", "fusion"})
    budget = __doc__

    def match(self, task: Task, model: ReferenceModel) -> Match | None:
        if len(model.outputs) != 1:
            return None
        out = model.outputs[0]
        options = loss_options(out)
        if options is None:
            return None
        first, nll = out.args[0], False
        if out.op == "nll_loss":  # of log_softmax over the rows: cross-entropy; of given log-probabilities: a gather
            inner = _log_softmax_input(first, model)
            first, nll = (inner, False) if inner is not None else (first, True)
        flat = flattens_rows(first) is not None  # rows over the last dimension, not classes in dim 1
        logits, targets = _operand(first), _operand(out.args[1], vector=True)
        if logits.op != "input" or targets.op != "input":
            return None
        if task.backward and (task.grad_inputs and logits.name not in task.grad_inputs or
                              targets.name in task.grad_inputs):
            return None
        # nll_loss(log_softmax(x, -1)) is cross-entropy only where the classes are also nll's dimension 1
        two_d = out.op == "nll_loss" and not nll and not flat
        spec = {**options, "logits": logits.name, "targets": targets.name, "backward": task.backward, "flat": flat,
                "nll": nll, "two_d": two_d,
                "upcast": float32_upcast_calls(model.source, out.op)}
        what = "negative log-likelihood (a gather of the targets' log-probabilities)" if nll else \
            "cross-entropy with an online logsumexp"
        return Match(self, task, model, spec,
                     summary=f"{what} ({options['reduction']}), "
                             f"{'forward + backward' if task.backward else 'forward'}")

    def knobs(self, match: Match) -> list[KnobSpec]:
        return FORWARD_KNOBS + (BACKWARD_KNOBS if match.spec["backward"] else [])

    def presets(self, match: Match) -> list[dict[str, int]]:
        return [{"CHUNK": 8192, "TILE": 8192, "ELEMS_PER_WARP": 512}, {"ELEMS_PER_WARP": 128, "CHUNK": 2048}]

    def render(self, match: Match, params: dict[str, int]) -> str:
        spec = match.spec
        doc = f"Template `cross_entropy` for {match.task.id}: {match.summary}.\n\n" + \
            (__doc__ or "").split("\n\n", 1)[1]
        host = CE_HOST + (CE_AUTOGRAD + CE_SCALED_HOST if spec["backward"] else "")
        kernels = CE_KERNELS + (CE_GRAD_KERNEL + CE_FUSED_KERNELS if spec["backward"] else "")
        return assemble(doc, match, params, kernels, host, forward_body(spec))


def forward_body(spec: dict) -> str:
    options = f"{spec['reduction']!r}, {_scalar(spec['ignore_index'], 'int')}, {_scalar(spec['smoothing'], 'float')}"
    options += f", {bool(spec.get('nll'))}"
    dtype = "torch.promote_types({x}.dtype, torch.float32)" if spec["upcast"] else "{x}.dtype"
    dtype = dtype.format(x=spec["logits"])
    x, t = spec["logits"], spec["targets"]
    if spec.get("flat"):
        x, t = f"{x}.reshape(-1, {x}.shape[-1])", f"{t}.reshape(-1)"
    call = f"{x}, {t}, {options}, {dtype}"
    guard = ""
    if spec.get("two_d"):
        guard = (f"if {x}.dim() > 2:\n    raise ValueError('log_softmax over the last dimension, nll_loss over "
                 f"dimension 1: not cross-entropy for inputs of rank > 2')\n")
    if spec["backward"]:
        return f"{guard}return _CrossEntropy.apply({call})"
    return f"{guard}return _ce_forward({call})[0]"


def _scalar(value, kind: str) -> str:
    return f"{kind}({value})" if isinstance(value, str) else repr(value)


# The kernels are plain text with constexpr switches, so the linear + cross-entropy template reuses them.
CE_KERNELS = '''
@triton.jit
def _ce_stats_kernel(x_ptr, t_ptr, part_ptr, lse_ptr, loss_ptr, out_ptr, count_ptr, n_rows, n_cols, inner, seg_len,
                     n_splits, ignore_index, smoothing, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,
                     STRIDED: tl.constexpr, SMOOTH: tl.constexpr, FINISH: tl.constexpr, REDUCE: tl.constexpr,
                     MEAN: tl.constexpr, NLL: tl.constexpr):
    # BLOCK_R rows x one segment of columns, read once: running max m and sum s of exp(z - m) per row,
    # the target's logit (one gathered load) and, with label smoothing, the sum of the logits
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    split = tl.program_id(1)
    rmask = rows < n_rows
    r64 = rows.to(tl.int64)
    if STRIDED:  # class dimension 1 of [N, C, inner]: a row is (n, i), its classes are inner apart
        base = (r64 // inner) * n_cols * inner + r64 % inner
    else:
        base = r64 * n_cols
    start = split * seg_len
    end = tl.minimum(start + seg_len, n_cols)
    t = tl.load(t_ptr + rows, mask=rmask, other=ignore_index)
    valid = rmask & (t != ignore_index)
    here = valid & (t >= start) & (t < end)
    t_off = t * inner if STRIDED else t
    zt = tl.load(x_ptr + base + t_off, mask=here, other=0.0).to(tl.float32)
    m = tl.full([BLOCK_R], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK_R], dtype=tl.float32)
    zsum = tl.zeros([BLOCK_R], dtype=tl.float32)
    if NLL:  # the inputs are log-probabilities: the loss is the target's, nothing else is read
        m = tl.zeros([BLOCK_R], dtype=tl.float32)
        s = tl.zeros([BLOCK_R], dtype=tl.float32) + 1.0
    else:
        for c0 in range(start, end, BLOCK_C):
            cols = c0 + tl.arange(0, BLOCK_C)
            mask = rmask[:, None] & (cols < end)[None, :]
            if STRIDED:
                offs = base[:, None] + cols.to(tl.int64)[None, :] * inner
            else:
                offs = base[:, None] + cols[None, :]
            z = tl.load(x_ptr + offs, mask=mask, other=float("-inf")).to(tl.float32)
            m_new = tl.maximum(m, tl.max(z, axis=1))
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
            s = s * tl.exp(m - m_safe) + tl.sum(tl.exp(z - m_safe[:, None]), axis=1)
            m = m_new
            if SMOOTH:
                zsum += tl.sum(tl.where(mask, z, 0.0), axis=1)
    if FINISH:  # the whole row was this program's: its loss now
        lse = m + tl.log(s)
        loss = (m - zt) + tl.log(s)  # not lse - zt: that loses the digits of a small loss to m's rounding
        if SMOOTH:
            loss = (1.0 - smoothing) * loss + smoothing * (lse - zsum / n_cols)
        tl.store(lse_ptr + rows, lse, mask=rmask)
        tl.store(loss_ptr + rows, tl.where(valid, loss, 0.0).to(loss_ptr.dtype.element_ty), mask=rmask)
        if REDUCE:  # the only program (a small problem): the sum or mean too, in this one launch
            total = tl.sum(tl.where(valid, loss, 0.0), axis=0)
            count = tl.sum(tl.where(valid, 1.0, 0.0), axis=0)
            tl.store(count_ptr, count)
            if MEAN:
                total = total / count
            tl.store(out_ptr, total.to(out_ptr.dtype.element_ty))
    else:
        part = part_ptr + (rows * n_splits + split) * 4
        tl.store(part, m, mask=rmask)
        tl.store(part + 1, s, mask=rmask)
        tl.store(part + 2, zsum, mask=rmask)
        tl.store(part + 3, zt, mask=rmask)


@triton.jit
def _ce_combine_kernel(t_ptr, part_ptr, lse_ptr, loss_ptr, n_rows, n_cols, n_splits, ignore_index, smoothing,
                       BLOCK_R: tl.constexpr, BLOCK_S: tl.constexpr, SMOOTH: tl.constexpr):
    # the segments of split rows: combine their (max, sum) pairs into the row's logsumexp and loss
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = rows < n_rows
    j = tl.arange(0, BLOCK_S)
    pmask = rmask[:, None] & (j < n_splits)[None, :]
    part = part_ptr + (rows[:, None] * n_splits + j[None, :]) * 4
    pm = tl.load(part, mask=pmask, other=float("-inf"))
    ps = tl.load(part + 1, mask=pmask, other=0.0)
    m = tl.max(pm, axis=1)
    m = tl.where(m == float("-inf"), 0.0, m)
    log_s = tl.log(tl.sum(ps * tl.exp(pm - m[:, None]), axis=1))
    lse = m + log_s
    zt = tl.sum(tl.load(part + 3, mask=pmask, other=0.0), axis=1)
    t = tl.load(t_ptr + rows, mask=rmask, other=ignore_index)
    loss = (m - zt) + log_s
    if SMOOTH:
        zsum = tl.sum(tl.load(part + 2, mask=pmask, other=0.0), axis=1)
        loss = (1.0 - smoothing) * loss + smoothing * (lse - zsum / n_cols)
    tl.store(lse_ptr + rows, lse, mask=rmask)
    tl.store(loss_ptr + rows, tl.where(t != ignore_index, loss, 0.0).to(loss_ptr.dtype.element_ty), mask=rmask)


@triton.jit
def _ce_reduce_kernel(loss_ptr, t_ptr, out_ptr, count_ptr, n_rows, ignore_index, MEAN: tl.constexpr,
                      BLOCK: tl.constexpr):
    # one program: the sum (or mean over targets not ignored) of the per-row losses, in a fixed order
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    cnt = tl.zeros([BLOCK], dtype=tl.float32)
    for r0 in range(0, n_rows, BLOCK):
        rows = r0 + tl.arange(0, BLOCK)
        mask = rows < n_rows
        acc += tl.load(loss_ptr + rows, mask=mask, other=0.0)
        t = tl.load(t_ptr + rows, mask=mask, other=ignore_index)
        cnt += tl.where(mask & (t != ignore_index), 1.0, 0.0)
    total = tl.sum(acc, axis=0)
    count = tl.sum(cnt, axis=0)
    tl.store(count_ptr, count)
    if MEAN:
        total = total / count
    tl.store(out_ptr, total.to(out_ptr.dtype.element_ty))
'''

CE_FUSED_KERNELS = '''
@triton.jit
def _ce_fused_kernel(z_ptr, t_ptr, loss_ptr, dz_ptr, count_ptr, n_cols, ignore_index, smoothing, GRAD: tl.constexpr,
                     MEAN: tl.constexpr, SMOOTH: tl.constexpr, BLOCK_C: tl.constexpr):
    # one row: its loss and, in the same launch, dlogits = softmax - onehot (scaled by 1/count for a
    # mean); the second pass re-reads the row, from L2 while it is recent; one exp per logit per pass
    row = tl.program_id(0)
    base = tl.cast(row, tl.int64) * n_cols
    t = tl.load(t_ptr + row)
    valid = t != ignore_index
    zt = tl.load(z_ptr + base + t, mask=valid, other=0.0).to(tl.float32)
    m = float("-inf")
    s = 0.0
    zsum = tl.zeros([BLOCK_C], dtype=tl.float32)
    for c0 in range(0, n_cols, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        mask = cols < n_cols
        z = tl.load(z_ptr + base + cols, mask=mask, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(z, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(z - m_new), axis=0)
        m = m_new
        if SMOOTH:
            zsum += tl.where(mask, z, 0.0)
    log_s = tl.log(s)
    lse = m + log_s
    loss = (m - zt) + log_s
    if SMOOTH:
        loss = (1.0 - smoothing) * loss + smoothing * (lse - tl.sum(zsum, axis=0) / n_cols)
    tl.store(loss_ptr + row, tl.where(valid, loss, 0.0))
    if GRAD:
        scale = tl.where(valid, 1.0, 0.0)
        if MEAN:
            scale = scale / tl.load(count_ptr)
        for c0 in range(0, n_cols, BLOCK_C):
            cols = c0 + tl.arange(0, BLOCK_C)
            mask = cols < n_cols
            z = tl.load(z_ptr + base + cols, mask=mask, other=0.0).to(tl.float32)
            hit = tl.where(cols == t, 1.0, 0.0)
            if SMOOTH:
                dz = tl.exp(z - lse) - (1.0 - smoothing) * hit - smoothing / n_cols
            else:
                dz = tl.exp(z - lse) - hit
            tl.store(dz_ptr + base + cols, (dz * scale).to(dz_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _count_kernel(t_ptr, count_ptr, n_rows, ignore_index, BLOCK: tl.constexpr):
    # targets not ignored, the mean's denominator
    cnt = tl.zeros([BLOCK], dtype=tl.float32)
    for r0 in range(0, n_rows, BLOCK):
        rows = r0 + tl.arange(0, BLOCK)
        t = tl.load(t_ptr + rows, mask=rows < n_rows, other=ignore_index)
        cnt += tl.where(t != ignore_index, 1.0, 0.0)
    tl.store(count_ptr, tl.sum(cnt, axis=0))


@triton.jit
def _scale_kernel(x_ptr, g_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # out = x * g for the scalar incoming gradient g (read on the device: no host sync)
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(g_ptr).to(tl.float32)
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, (x * g).to(out_ptr.dtype.element_ty), mask=mask)
'''

CE_SCALED_HOST = '''
def _scaled(x, g, dtype):
    out = torch.empty(x.shape, dtype=dtype, device=x.device)
    n = x.numel()
    if n:
        _scale_kernel[(triton.cdiv(n, 4096),)](x, g, out, n, BLOCK=4096, num_warps=8)
    return out
'''

CE_GRAD_KERNEL = '''
@triton.jit
def _ce_grad_kernel(x_ptr, t_ptr, lse_ptr, g_ptr, count_ptr, dx_ptr, n_rows, n_cols, inner, ignore_index, smoothing,
                    BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr, STRIDED: tl.constexpr, SMOOTH: tl.constexpr,
                    REDUCTION: tl.constexpr, NLL: tl.constexpr):
    # dlogits = g * (softmax(z) - (1 - smoothing) * onehot(t) - smoothing / V), zero on ignored rows:
    # reads the logits once, writes dlogits once (REDUCTION: 0 none, 1 sum, 2 mean)
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    rmask = rows < n_rows
    mask = rmask[:, None] & (cols < n_cols)[None, :]
    r64 = rows.to(tl.int64)
    if STRIDED:
        base = (r64 // inner) * n_cols * inner + r64 % inner
        offs = base[:, None] + cols.to(tl.int64)[None, :] * inner
    else:
        offs = (r64 * n_cols)[:, None] + cols[None, :]
    t = tl.load(t_ptr + rows, mask=rmask, other=ignore_index)
    lse = tl.load(lse_ptr + rows, mask=rmask, other=0.0)
    if REDUCTION == 0:
        g = tl.load(g_ptr + rows, mask=rmask, other=0.0).to(tl.float32)
    else:
        g = tl.zeros([BLOCK_R], dtype=tl.float32) + tl.load(g_ptr).to(tl.float32)
        if REDUCTION == 2:
            g = g / tl.load(count_ptr)
    g = tl.where(t != ignore_index, g, 0.0)
    hit = tl.where(cols[None, :] == t[:, None], 1.0, 0.0)
    if NLL:  # d(-x[t]) / dx: the logits are not read
        dz = -hit
    elif SMOOTH:
        z = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        p = tl.exp(z - lse[:, None])
        dz = p - (1.0 - smoothing) * hit - smoothing / n_cols
    else:
        z = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        dz = tl.exp(z - lse[:, None]) - hit
    tl.store(dx_ptr + offs, (g[:, None] * dz).to(dx_ptr.dtype.element_ty), mask=mask)
'''

CE_HOST = '''
def _ce_geometry(logits):
    """(contiguous logits, rows, classes, inner): classes in dimension 1, rows = the other positions."""
    x = logits.contiguous()
    if x.dim() == 1:
        return x, 1, x.shape[0], 1
    inner = 1
    for size in x.shape[2:]:
        inner *= size
    return x, x.shape[0] * inner, x.shape[1], inner


def _ce_forward(logits, targets, reduction, ignore_index, smoothing, nll, out_dtype):
    """(loss, logsumexp per row, count of targets not ignored) of the logits' rows."""
    x, n_rows, n_cols, inner = _ce_geometry(logits)
    t = targets.contiguous().view(-1)
    lse = torch.empty(n_rows, dtype=torch.float32, device=x.device)
    count = torch.empty((), dtype=torch.float32, device=x.device)
    rows_dtype = out_dtype if reduction == "none" else torch.float32
    rows_loss = torch.empty(n_rows, dtype=rows_dtype, device=x.device)
    loss = rows_loss.view(targets.shape) if reduction == "none" else torch.empty((), dtype=out_dtype, device=x.device)
    one_launch = False
    if n_rows and n_cols:
        block_c = 16 if nll else min(CHUNK, triton.next_power_of_2(n_cols))  # a gather: rows are what count
        block_r = max(1, min(TILE // block_c, triton.next_power_of_2(n_rows)))
        warps = max(1, min(16, block_r * block_c // ELEMS_PER_WARP))
        programs = triton.cdiv(n_rows, block_r)
        splits = 1
        if programs < TARGET_PROGRAMS and n_cols > MIN_SEGMENT and not nll:
            splits = min(triton.cdiv(n_cols, MIN_SEGMENT), triton.cdiv(TARGET_PROGRAMS, programs))
        seg_len = triton.cdiv(triton.cdiv(n_cols, splits), block_c) * block_c
        splits = triton.cdiv(n_cols, seg_len)
        part = torch.empty((n_rows, splits, 4) if splits > 1 else (1,), dtype=torch.float32, device=x.device)
        smooth = smoothing != 0.0
        one_launch = reduction != "none" and programs == 1 and splits == 1
        _ce_stats_kernel[(programs, splits)](x, t, part, lse, rows_loss, loss, count, n_rows, n_cols, inner, seg_len,
                                             splits, ignore_index, smoothing, BLOCK_R=block_r, BLOCK_C=block_c,
                                             STRIDED=inner != 1, SMOOTH=smooth, FINISH=splits == 1,
                                             REDUCE=one_launch, MEAN=reduction == "mean", NLL=nll,
                                             num_warps=warps)
        if splits > 1:
            block_s = max(2, triton.next_power_of_2(splits))
            block_rc = max(1, min(1024 // block_s, triton.next_power_of_2(n_rows)))
            _ce_combine_kernel[(triton.cdiv(n_rows, block_rc),)](t, part, lse, rows_loss, n_rows, n_cols, splits,
                                                                 ignore_index, smoothing, BLOCK_R=block_rc,
                                                                 BLOCK_S=block_s, SMOOTH=smooth, num_warps=4)
    if reduction != "none" and not one_launch:
        block = min(4096, max(16, triton.next_power_of_2(n_rows)))
        _ce_reduce_kernel[(1,)](rows_loss, t, loss, count, n_rows, ignore_index, MEAN=reduction == "mean",
                                BLOCK=block, num_warps=max(1, min(16, block // 256)))
    return loss, lse, count
'''

CE_AUTOGRAD = '''
def _ce_backward(grad, logits, targets, lse, count, reduction, ignore_index, smoothing, nll):
    x, n_rows, n_cols, inner = _ce_geometry(logits)
    t = targets.contiguous().view(-1)
    g = grad.contiguous().view(-1) if reduction == "none" else grad.contiguous()
    dx = torch.empty_like(x)
    if n_rows and n_cols:
        block_c = min(GRAD_TILE, max(16, triton.next_power_of_2(n_cols)))
        block_r = max(1, min(GRAD_TILE // block_c, triton.next_power_of_2(n_rows)))
        grid = (triton.cdiv(n_rows, block_r), triton.cdiv(n_cols, block_c))
        _ce_grad_kernel[grid](x, t, lse, g, count, dx, n_rows, n_cols, inner, ignore_index, smoothing,
                              BLOCK_R=block_r, BLOCK_C=block_c, STRIDED=inner != 1, SMOOTH=smoothing != 0.0,
                              REDUCTION={"none": 0, "sum": 1, "mean": 2}[reduction], NLL=nll, num_warps=GRAD_WARPS)
    return dx.view(logits.shape)


def _ce_fused(x, targets, reduction, ignore_index, smoothing, out_dtype):
    """(loss, dlogits for an incoming gradient of 1) in one pass per row: rows of x, not split."""
    n_rows, n_cols = x.shape
    t = targets.contiguous().view(-1)
    count = torch.empty((), dtype=torch.float32, device=x.device)
    block = min(4096, max(16, triton.next_power_of_2(n_rows)))
    _count_kernel[(1,)](t, count, n_rows, ignore_index, BLOCK=block, num_warps=4)
    rows_loss = torch.empty(n_rows, dtype=torch.float32, device=x.device)
    dz = torch.empty_like(x)
    _ce_fused_kernel[(n_rows,)](x, t, rows_loss, dz, count, n_cols, ignore_index, smoothing, GRAD=True,
                                MEAN=reduction == "mean", SMOOTH=smoothing != 0.0,
                                BLOCK_C=min(FUSED_CHUNK, max(16, triton.next_power_of_2(n_cols))),
                                num_warps=FUSED_WARPS)
    loss = torch.empty((), dtype=out_dtype, device=x.device)
    _ce_reduce_kernel[(1,)](rows_loss, t, loss, count, n_rows, ignore_index, MEAN=reduction == "mean",
                            BLOCK=block, num_warps=max(1, min(16, block // 256)))
    return loss, dz


class _CrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, targets, reduction, ignore_index, smoothing, nll, out_dtype):
        x, n_rows, n_cols, inner = _ce_geometry(logits)
        # Training, many rows: the forward's one pass over a row also writes its gradient (as Liger's
        # does), and a backward whose incoming gradient is 1 (loss.backward()) hands it over as is.
        ctx.fused = bool(FUSED_GRAD) and ctx.needs_input_grad[0] and reduction != "none" and not nll and \
            inner == 1 and n_rows >= TARGET_PROGRAMS and n_cols > 0
        ctx.shape = logits.shape
        if ctx.fused:
            loss, dz = _ce_fused(x.view(n_rows, n_cols), targets, reduction, ignore_index, smoothing, out_dtype)
            ctx.save_for_backward(dz)
            return loss
        loss, lse, count = _ce_forward(logits, targets, reduction, ignore_index, smoothing, nll, out_dtype)
        ctx.save_for_backward(logits, targets, lse, count)
        ctx.options = (reduction, ignore_index, smoothing, nll)
        return loss

    @staticmethod
    def backward(ctx, grad):
        if ctx.fused:
            (dz,) = ctx.saved_tensors
            if float(grad) == 1.0:  # a 4-byte read: the common case needs no second pass
                return dz.view(ctx.shape), None, None, None, None, None, None
            return _scaled(dz, grad.contiguous(), dz.dtype).view(ctx.shape), None, None, None, None, None, None
        logits, targets, lse, count = ctx.saved_tensors
        dx = _ce_backward(grad, logits, targets, lse, count, *ctx.options)
        return dx, None, None, None, None, None, None
'''
