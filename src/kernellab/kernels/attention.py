"""Flash-style attention: softmax(Q·Kᵀ·scale)·V with an online softmax, never materialising the
scores; causal (top-left aligned, as ``is_causal=True``) or not, grouped-query / multi-query heads
(``enable_gqa=True``: query head h reads key/value head h // (H / H_kv)), any head dim (padded to a
power of two), fp16/bf16 on tensor cores and fp32 in IEEE or TF32 precision as the task says.
Matched from ``F.scaled_dot_product_attention(q, k, v[, is_causal][, scale][, enable_gqa])`` and from
the written-out ``softmax(q @ k.transpose(-2, -1) * scale, dim=-1) @ v``. Backward (where the task asks):
the forward saves each row's log-sum-exp; one kernel recomputes the probabilities per key block and
accumulates dK and dV (over every query head of a key/value head group), another accumulates dQ.

Budget per call, B·H query heads of Lq rows, keys/values of Lk rows, head dim D (causal: about half
the blocks):
  forward   4·B·H·Lq·Lk·D FLOPs (two matmuls); reads Q once and K, V once per BLOCK_M query rows
            (B·H·(Lq·D + 2·Lk·D·Lq/BLOCK_M)·elem before L2 reuse), writes B·H·Lq·D·elem and 4·B·H·Lq
            bytes of log-sum-exp.
  backward  10·B·H·Lq·Lk·D FLOPs (five matmuls: the scores again, dV, dP, dK, dQ); reads Q, K, V, O, dO
            once per block row/column, writes dQ, dK, dV.
"""

from __future__ import annotations

from kernellab.kernels.reference_model import Node, ReferenceModel
from kernellab.kernels.template import (
    KnobSpec,
    Match,
    Template,
    assemble,
    register_template,
)
from kernellab.tasks.model import Task

KNOBS = [
    KnobSpec("BLOCK_M", 128, "16..256", "query rows per program (16-bit inputs)"),
    KnobSpec("BLOCK_N", 64, "16..256", "keys per inner step (16-bit inputs)"),
    KnobSpec("NUM_WARPS", 8, "2,4,8", "warps per program (16-bit inputs)"),
    KnobSpec("NUM_STAGES", 3, "1,2,3,4", "software-pipelining stages of the key loop (16-bit inputs)"),
    KnobSpec("BLOCK_M_F32", 64, "16..128", "query rows per program (float32 inputs)"),
    KnobSpec("BLOCK_N_F32", 32, "16..128", "keys per inner step (float32 inputs)"),
    KnobSpec("NUM_WARPS_F32", 4, "2,4,8", "warps per program (float32 inputs)"),
    KnobSpec("BLOCK_BWD", 64, "16..128", "rows and keys per program of the backward kernels"),
    KnobSpec("NUM_WARPS_BWD", 8, "2,4,8", "warps per program of the backward kernels"),
]


def _is_last_two_transpose(node: Node) -> bool:
    return node.op == "transpose" and sorted(node.value) in ([-2, -1], [2, 3])


def _scale_of(node: Node) -> tuple[Node, Node | None]:
    """(scores, scale): ``scores * s``, ``s * scores``, ``scores / s`` with s a number or a scalar."""
    if node.op == "mul":
        for a, b in (node.args, node.args[::-1]):
            if b.op in ("const", "scalar"):
                return a, b
    if node.op == "div" and node.args[1].op in ("const", "scalar"):
        return node.args[0], Node("div", (Node("const", value=1.0), node.args[1]))
    return node, None


def read_attention(out: Node) -> dict | None:
    """q, k, v, causal, gqa and the scale of an attention output, or None."""
    if out.op == "sdpa":
        q, k, v = out.args
        extras = {key for key, _ in out.kw} - {"is_causal", "scale", "enable_gqa", "dropout_p", "attn_mask"}
        mask = out.kwarg("attn_mask")
        dropout = out.kwarg("dropout_p")
        causal, gqa = out.const("is_causal", False), out.const("enable_gqa", False)
        scale = out.kwarg("scale")
        if mask is not None and mask.op == "const" and mask.value is None:
            mask = None
        if extras or (mask is not None and mask.op != "input") \
                or (dropout is not None and not (dropout.op == "const" and dropout.value == 0)) \
                or causal is ... or gqa is ... or (scale is not None and scale.op not in ("const", "scalar")):
            return None
        if scale is not None and scale.op == "const" and scale.value is None:
            scale = None
    elif out.op == "matmul" and out.args[0].op == "softmax":
        probs, v = out.args
        if probs.const("dim") not in (-1, 3) or len(probs.kw) != 1:
            return None
        scores, scale = _scale_of(probs.args[0])
        if scores.op != "matmul" or not _is_last_two_transpose(scores.args[1]):
            return None
        q, k = scores.args[0], scores.args[1].args[0]
        causal, gqa, mask = False, False, None
    else:
        return None
    if any(t.op != "input" for t in (q, k, v)) or len({q.name, k.name, v.name}) != 3:
        return None
    if mask is not None and mask.name in {q.name, k.name, v.name}:
        return None
    return {"q": q.name, "k": k.name, "v": v.name, "causal": bool(causal), "gqa": bool(gqa), "scale": scale,
            "mask": mask.name if mask is not None else None}


@register_template("attention")
class AttentionTemplate(Template):
    categories = frozenset({"attention", "fusion"})
    budget = __doc__

    def match(self, task: Task, model: ReferenceModel) -> Match | None:
        if len(model.outputs) != 1:
            return None
        spec = read_attention(model.outputs[0])
        if spec is None or any(model.input_ranks.get(spec[t], 4) not in (3, 4) for t in ("q", "k", "v")):
            return None
        if spec["mask"] is not None and (task.backward or model.input_ranks.get(spec["mask"], 4) > 4):
            return None  # the backward kernels do not read a mask
        spec["backward"] = task.backward
        spec["tf32"] = task.fp32_precision == "tf32"
        kind = ("causal" if spec["causal"] else "non-causal") + (", grouped-query" if spec["gqa"] else "") + \
            (", with the mask input" if spec["mask"] else "")
        what = "forward + backward" if task.backward else "forward"
        return Match(self, task, model, spec, summary=f"flash attention ({kind}), {what}")

    def knobs(self, match: Match) -> list[KnobSpec]:
        return KNOBS if match.spec["backward"] else KNOBS[:7]

    def presets(self, match: Match) -> list[dict[str, int]]:
        return [{"BLOCK_M": 128, "BLOCK_N": 128, "NUM_WARPS": 8, "NUM_STAGES": 2},
                {"BLOCK_M": 64, "BLOCK_N": 64, "NUM_WARPS": 4, "NUM_STAGES": 4}]

    def render(self, match: Match, params: dict[str, int]) -> str:
        spec = match.spec
        doc = f"Template `attention` for {match.task.id}: {match.summary}.\n\n" + (__doc__ or "").split("\n\n", 1)[1]
        kernels = FORWARD + (BACKWARD if spec["backward"] else "")
        host = _host(spec)
        scale = spec["scale"]
        scale_arg = "None" if scale is None else (f"float(self.{scale.name})" if scale.op == "scalar" else
                                                  _scale_literal(scale))
        q, k, v = spec["q"], spec["k"], spec["v"]
        if spec["backward"]:
            body = f"return _Attention.apply({q}, {k}, {v}, {scale_arg})"
        else:
            mask = f", {spec['mask']}" if spec["mask"] else ""
            body = f"return _attention_forward({q}, {k}, {v}, {scale_arg}{mask})[0]"
        return assemble(doc, match, params, kernels, host, body, imports="import math\n")


def _scale_literal(node: Node) -> str:
    if node.op == "const":
        return repr(float(node.value))
    if node.op == "div" and node.args[0].op == "const":
        den = node.args[1]
        return f"{float(node.args[0].value)!r} / " + (repr(float(den.value)) if den.op == "const" else f"float(self.{den.name})")
    raise ValueError(node.op)


FORWARD = '''
@triton.jit
def _apply_mask(s, m_base, rows, cols, smm, smn, LQ, LK, MASK: tl.constexpr):
    # the mask tile of these rows and keys: added (in log2 units, as s is) or, boolean, -inf where false
    inside = (rows[:, None] < LQ) & (cols[None, :] < LK)
    mk = tl.load(m_base + rows[:, None].to(tl.int64) * smm + cols[None, :].to(tl.int64) * smn, mask=inside, other=0)
    if MASK == 2:
        return tl.where(mk != 0, s, float("-inf"))
    return s + mk.to(tl.float32) * 1.4426950408889634


@triton.jit
def _attn_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, sqb, sqh, sqm, sqd, skb, skh, skn, skd, svb, svh, svn,
                     svd, sob, soh, som, sod, mask_ptr, smb, smh, smm, smn, H, GROUP, LQ, LK, D, qk_scale,
                     CAUSAL: tl.constexpr, MASK: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_D: tl.constexpr, PRECISION: tl.constexpr):
    # BLOCK_M query rows of one head: K and V stream through in BLOCK_N-key blocks with an online
    # softmax (running max m, running sum l); 4 * BLOCK_M * BLOCK_N * D FLOPs per key block
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    hk = h // GROUP
    rows = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dcol = tl.arange(0, BLOCK_D)
    dmask = dcol < D
    keys = tl.arange(0, BLOCK_N)
    q_base = q_ptr + b.to(tl.int64) * sqb + h.to(tl.int64) * sqh
    k_base = k_ptr + b.to(tl.int64) * skb + hk.to(tl.int64) * skh
    v_base = v_ptr + b.to(tl.int64) * svb + hk.to(tl.int64) * svh
    m_base = mask_ptr + b.to(tl.int64) * smb + h.to(tl.int64) * smh  # MASK 1: added, 2: boolean (keep where true)
    q = tl.load(q_base + rows[:, None].to(tl.int64) * sqm + dcol[None, :] * sqd,
                mask=(rows[:, None] < LQ) & dmask[None, :], other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    end = LK
    full = (LK // BLOCK_N) * BLOCK_N
    if CAUSAL:
        end = tl.minimum(LK, (start_m + 1) * BLOCK_M)
        full = tl.minimum(full, ((start_m * BLOCK_M) // BLOCK_N) * BLOCK_N)
    # blocks every row of this tile sees whole: no masks
    for start_n in range(0, full, BLOCK_N):
        cols = start_n + keys
        k = tl.load(k_base + cols[None, :].to(tl.int64) * skn + dcol[:, None] * skd, mask=dmask[:, None], other=0.0)
        s = tl.dot(q, k, input_precision=PRECISION) * qk_scale
        if MASK:
            s = _apply_mask(s, m_base, rows, cols, smm, smn, LQ, LK, MASK)
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_use = m_new
        if MASK:  # rows with every key so far masked out: keep exp2 away from -inf - -inf
            m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.exp2(s - m_use[:, None])
        alpha = tl.exp2(m_i - m_use)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_base + cols[:, None].to(tl.int64) * svn + dcol[None, :] * svd, mask=dmask[None, :], other=0.0)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc=acc, input_precision=PRECISION)
        m_i = m_new
    # the diagonal and the ragged tail: masked
    for start_n in range(full, end, BLOCK_N):
        cols = start_n + keys
        cmask = cols < LK
        k = tl.load(k_base + cols[None, :].to(tl.int64) * skn + dcol[:, None] * skd,
                    mask=dmask[:, None] & cmask[None, :], other=0.0)
        s = tl.dot(q, k, input_precision=PRECISION) * qk_scale
        ok = cmask[None, :]
        if CAUSAL:
            ok = ok & (cols[None, :] <= rows[:, None])
        s = tl.where(ok, s, float("-inf"))
        if MASK:
            s = _apply_mask(s, m_base, rows, cols, smm, smn, LQ, LK, MASK)
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_use = m_new
        if MASK:
            m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.exp2(s - m_use[:, None])
        alpha = tl.exp2(m_i - m_use)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_base + cols[:, None].to(tl.int64) * svn + dcol[None, :] * svd,
                    mask=cmask[:, None] & dmask[None, :], other=0.0)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc=acc, input_precision=PRECISION)
        m_i = m_new
    if MASK:
        l_i = tl.where(l_i == 0.0, 1.0, l_i)
    out = acc / l_i[:, None]
    rmask = rows < LQ
    o_base = o_ptr + b.to(tl.int64) * sob + h.to(tl.int64) * soh
    tl.store(o_base + rows[:, None].to(tl.int64) * som + dcol[None, :] * sod, out.to(o_ptr.dtype.element_ty),
             mask=rmask[:, None] & dmask[None, :])
    tl.store(lse_ptr + bh.to(tl.int64) * LQ + rows, m_i + tl.log2(l_i), mask=rmask)  # log2-domain
'''

BACKWARD = '''
@triton.jit
def _attn_bwd_delta_kernel(o_ptr, do_ptr, delta_ptr, n_rows, D, BLOCK: tl.constexpr, BLOCK_D: tl.constexpr):
    # delta = rowsum(dO * O): reads both once (contiguous [rows, D]), writes 4 bytes per row
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    dcol = tl.arange(0, BLOCK_D)
    mask = (rows[:, None] < n_rows) & (dcol[None, :] < D)
    offs = rows[:, None].to(tl.int64) * D + dcol[None, :]
    o = tl.load(o_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    do = tl.load(do_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(delta_ptr + rows, tl.sum(o * do, 1), mask=rows < n_rows)


@triton.jit
def _attn_bwd_dkdv_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr, H, HK, GROUP, LQ, LK,
                          D, qk_scale, sm_scale, CAUSAL: tl.constexpr, BLOCK: tl.constexpr, BLOCK_D: tl.constexpr,
                          PRECISION: tl.constexpr):
    # one block of keys of one key/value head: every query block of every query head in its group
    # recomputes P = exp2(S - lse), then dV += P^T dO, dS = P * (dO V^T - delta), dK += dS^T Q * scale
    start_n = tl.program_id(0)
    bhk = tl.program_id(1)
    b = bhk // HK
    hk = bhk % HK
    cols = start_n * BLOCK + tl.arange(0, BLOCK)
    cmask = cols < LK
    dcol = tl.arange(0, BLOCK_D)
    dmask = dcol < D
    kv_off = bhk.to(tl.int64) * LK * D + cols[:, None].to(tl.int64) * D + dcol[None, :]
    kv_mask = cmask[:, None] & dmask[None, :]
    k = tl.load(k_ptr + kv_off, mask=kv_mask, other=0.0)
    v = tl.load(v_ptr + kv_off, mask=kv_mask, other=0.0)
    dk = tl.zeros([BLOCK, BLOCK_D], dtype=tl.float32)
    dv = tl.zeros([BLOCK, BLOCK_D], dtype=tl.float32)
    lo = 0
    if CAUSAL:
        lo = start_n * BLOCK  # earlier query rows see none of these keys
    for g in range(0, GROUP):
        bh = (b * H + hk * GROUP + g).to(tl.int64)
        for start_m in range(lo, LQ, BLOCK):
            rows = start_m + tl.arange(0, BLOCK)
            rmask = rows < LQ
            q_off = bh * LQ * D + rows[:, None].to(tl.int64) * D + dcol[None, :]
            q = tl.load(q_ptr + q_off, mask=rmask[:, None] & dmask[None, :], other=0.0)
            do = tl.load(do_ptr + q_off, mask=rmask[:, None] & dmask[None, :], other=0.0)
            lse = tl.load(lse_ptr + bh * LQ + rows, mask=rmask, other=0.0)
            delta = tl.load(delta_ptr + bh * LQ + rows, mask=rmask, other=0.0)
            st = tl.dot(k, tl.trans(q), input_precision=PRECISION) * qk_scale  # [keys, rows]
            ok = cmask[:, None] & rmask[None, :]
            if CAUSAL:
                ok = ok & (cols[:, None] <= rows[None, :])
            pt = tl.where(ok, tl.exp2(st - lse[None, :]), 0.0)
            dv = tl.dot(pt.to(do.dtype), do, acc=dv, input_precision=PRECISION)
            dpt = tl.dot(v, tl.trans(do), input_precision=PRECISION)
            dst = pt * (dpt - delta[None, :])
            dk = tl.dot(dst.to(q.dtype), q, acc=dk, input_precision=PRECISION)
    tl.store(dk_ptr + kv_off, (dk * sm_scale).to(dk_ptr.dtype.element_ty), mask=kv_mask)
    tl.store(dv_ptr + kv_off, dv.to(dv_ptr.dtype.element_ty), mask=kv_mask)


@triton.jit
def _attn_bwd_dq_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr, H, HK, GROUP, LQ, LK, D, qk_scale,
                        sm_scale, CAUSAL: tl.constexpr, BLOCK: tl.constexpr, BLOCK_D: tl.constexpr,
                        PRECISION: tl.constexpr):
    # one block of query rows: dQ = sum over key blocks of dS K * scale
    start_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    b = bh // H
    hk = (bh % H) // GROUP
    rows = start_m * BLOCK + tl.arange(0, BLOCK)
    rmask = rows < LQ
    dcol = tl.arange(0, BLOCK_D)
    dmask = dcol < D
    q_off = bh * LQ * D + rows[:, None].to(tl.int64) * D + dcol[None, :]
    q = tl.load(q_ptr + q_off, mask=rmask[:, None] & dmask[None, :], other=0.0)
    do = tl.load(do_ptr + q_off, mask=rmask[:, None] & dmask[None, :], other=0.0)
    lse = tl.load(lse_ptr + bh * LQ + rows, mask=rmask, other=0.0)
    delta = tl.load(delta_ptr + bh * LQ + rows, mask=rmask, other=0.0)
    dq = tl.zeros([BLOCK, BLOCK_D], dtype=tl.float32)
    end = LK
    if CAUSAL:
        end = tl.minimum(LK, (start_m + 1) * BLOCK)
    kv_base = (b * HK + hk) * LK * D
    for start_n in range(0, end, BLOCK):
        cols = start_n + tl.arange(0, BLOCK)
        cmask = cols < LK
        kv_off = kv_base + cols[:, None].to(tl.int64) * D + dcol[None, :]
        k = tl.load(k_ptr + kv_off, mask=cmask[:, None] & dmask[None, :], other=0.0)
        v = tl.load(v_ptr + kv_off, mask=cmask[:, None] & dmask[None, :], other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * qk_scale
        ok = rmask[:, None] & cmask[None, :]
        if CAUSAL:
            ok = ok & (cols[None, :] <= rows[:, None])
        p = tl.where(ok, tl.exp2(s - lse[:, None]), 0.0)
        dp = tl.dot(do, tl.trans(v), input_precision=PRECISION)
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(k.dtype), k, acc=dq, input_precision=PRECISION)
    tl.store(dq_ptr + q_off, (dq * sm_scale).to(dq_ptr.dtype.element_ty), mask=rmask[:, None] & dmask[None, :])
'''


def _host(spec: dict) -> str:
    causal = spec["causal"]
    gqa = spec["gqa"]
    precision = "tf32" if spec["tf32"] else "ieee"
    text = f'''
LOG2E = 1.4426950408889634


def _heads(t):
    """[B, H, L, D] (a 3-dimensional [H, L, D] gets a batch of one)."""
    return t.unsqueeze(0) if t.dim() == 3 else t


def _shapes(q, k, v):
    B, H, LQ, D = q.shape
    HK, LK = k.shape[1], k.shape[2]
    if k.shape[0] != B or v.shape[:3] != k.shape[:3] or k.shape[-1] != D or v.shape[-1] != D:
        raise ValueError(f"attention: q {{tuple(q.shape)}}, k {{tuple(k.shape)}}, v {{tuple(v.shape)}}")
    if H % HK or ({not gqa} and H != HK):
        raise ValueError(f"attention: {{H}} query heads over {{HK}} key/value heads")
    return B, H, HK, LQ, LK, D


def _precision(q):
    return "{precision}" if q.dtype == torch.float32 else "tf32"


def _attention_forward(q, k, v, scale, mask=None):
    """Output [B, H, LQ, D] in q's dtype and each row's log2-domain log-sum-exp (fp32); ``mask``, where
    given, broadcasts to [B, H, LQ, LK] as scaled_dot_product_attention's attn_mask does."""
    squeeze = q.dim() == 3
    q, k, v = _heads(q), _heads(k), _heads(v)
    B, H, HK, LQ, LK, D = _shapes(q, k, v)
    mode = 0
    mask_strides = (0, 0, 0, 0)
    if mask is not None:
        mode = 2 if mask.dtype == torch.bool else 1
        mask = mask.expand(B, H, LQ, LK)
        mask_strides = mask.stride()
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    o = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = torch.empty((B, H, LQ), dtype=torch.float32, device=q.device)
    if q.numel() and LK:
        if q.dtype == torch.float32:
            bm, bn, warps, stages = BLOCK_M_F32, BLOCK_N_F32, NUM_WARPS_F32, 1
        else:
            bm, bn, warps, stages = BLOCK_M, BLOCK_N, NUM_WARPS, NUM_STAGES
        bm = max(16, min(bm, triton.next_power_of_2(LQ)))
        bn = max(16, min(bn, triton.next_power_of_2(LK)))
        if {causal}:
            bn = min(bn, bm)  # the causal loop bounds assume key blocks no taller than query blocks
        bd = max(16, triton.next_power_of_2(D))
        if bd >= 256:  # Q, K and V tiles of 256 columns: fewer rows and stages fit in shared memory
            bm, bn, stages = min(bm, 64), min(bn, 32), min(stages, 2)
        _attn_fwd_kernel[(triton.cdiv(LQ, bm), B * H)](
            q, k, v, o, lse, *q.stride(), *k.stride(), *v.stride(), *o.stride(), q if mask is None else mask,
            *mask_strides, H, H // HK, LQ, LK, D, scale * LOG2E, CAUSAL={causal}, MASK=mode, BLOCK_M=bm, BLOCK_N=bn,
            BLOCK_D=bd, PRECISION=_precision(q), num_warps=warps, num_stages=stages)
    elif q.numel():
        o.zero_()
    return (o[0] if squeeze else o), lse
'''
    if not spec["backward"]:
        return text
    return text + f'''

def _attention_backward(do, q, k, v, o, lse, scale):
    squeeze = q.dim() == 3
    q, k, v, o, do = (_heads(t).contiguous() for t in (q, k, v, o, do))
    B, H, HK, LQ, LK, D = _shapes(q, k, v)
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    if not (q.numel() and LK):
        dq.zero_(), dk.zero_(), dv.zero_()
    else:
        bd = max(16, triton.next_power_of_2(D))
        blk = max(16, min(BLOCK_BWD, triton.next_power_of_2(max(LQ, LK))))
        delta = torch.empty((B, H, LQ), dtype=torch.float32, device=q.device)
        rows = B * H * LQ
        _attn_bwd_delta_kernel[(triton.cdiv(rows, 64),)](o, do, delta, rows, D, BLOCK=64, BLOCK_D=bd)
        common = dict(CAUSAL={causal}, BLOCK=blk, BLOCK_D=bd, PRECISION=_precision(q), num_warps=NUM_WARPS_BWD)
        _attn_bwd_dkdv_kernel[(triton.cdiv(LK, blk), B * HK)](q, k, v, do, lse, delta, dk, dv, H, HK, H // HK, LQ, LK,
                                                               D, scale * LOG2E, scale, **common)
        _attn_bwd_dq_kernel[(triton.cdiv(LQ, blk), B * H)](q, k, v, do, lse, delta, dq, H, HK, H // HK, LQ, LK, D,
                                                            scale * LOG2E, scale, **common)
    if squeeze:
        dq, dk, dv = dq[0], dk[0], dv[0]
    return dq, dk, dv


class _Attention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, scale):
        o, lse = _attention_forward(q, k, v, scale)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.scale = scale
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse = ctx.saved_tensors
        return (*_attention_backward(do, q, k, v, o, lse, ctx.scale), None)
'''
