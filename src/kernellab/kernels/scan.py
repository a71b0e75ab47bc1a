"""Inclusive scans along the last dimension: ``cumsum``, ``cumprod`` and ``logcumsumexp``, after an
optional elementwise pre-op on the input; forward, and backward for ``cumsum`` (the reversed scan of
the incoming gradient).

Budget per call, ``M`` rows of ``N``, ``f`` FLOPs per element of the pre-op:
  forward   reads M·N·elem once, writes M·N·elem once; about (f + 2)·M·N FLOPs (logcumsumexp: one exp
            and one log per element and combine, ≈ 8·M·N). A program owns BLOCK_R rows and walks them in
            BLOCK_C-wide chunks: ``tl.associative_scan`` within the chunk, combined with the running
            value the earlier chunks leave (one per row, in registers). Few long rows are split over
            programs (``TARGET_PROGRAMS``, ``MIN_SEGMENT``): a first pass writes each segment's total
            (M·S fp32), the second scans each segment starting from the combination of the totals
            before it, reading x twice in all.
  backward  (cumsum) reads dy and writes dx once, walking each row's chunks from the last; M·N adds.
"""

from __future__ import annotations

from kernellab.kernels.reduction import pre_chain, value_code
from kernellab.kernels.reference_model import ReferenceModel
from kernellab.kernels.rows import ROWS_HOST, last_dim, scalars_of
from kernellab.kernels.template import KnobSpec, Match, Template, assemble, register_template
from kernellab.kernels.triton_expr import flops_per_element, helper_source
from kernellab.tasks.model import Task

KNOBS = [
    KnobSpec("CHUNK", 1024, "64..4096", "columns per step of the scan"),
    KnobSpec("TILE", 4096, "512..16384", "elements per program and step (rows x chunk)"),
    KnobSpec("NUM_WARPS", 4, "1,2,4,8,16", "warps per program"),
    KnobSpec("MIN_SEGMENT", 16384, "2048..131072", "shortest row segment when few long rows are split"),
    KnobSpec("TARGET_PROGRAMS", 264, "64..4096", "split long rows when fewer programs than this would run"),
]
# op -> (identity of the combine, the combine's body on a and b)
_SCANS = {
    "cumsum": ("0.0", "return a + b"),
    "cumprod": ("1.0", "return a * b"),
    "logcumsumexp": ('float("-inf")', "m = tl.maximum(a, b)\n    d = -tl.abs(a - b)\n"
                                      "    return tl.where(m == float(\"-inf\"), m, m + tl.log(1.0 + tl.exp(d)))"),
}


@register_template("scan")
class ScanTemplate(Template):
    categories = frozenset({"reductions", "fusion"})
    budget = __doc__

    def match(self, task: Task, model: ReferenceModel) -> Match | None:
        if len(model.outputs) != 1:
            return None
        out = model.outputs[0]
        if out.op not in _SCANS or {k for k, _ in out.kw} - {"dim"}:
            return None
        found = pre_chain(out.args[0], model)
        if found is None or found[1] or not last_dim(out, model, found[0]):
            return None
        x = found[0]
        backward = task.backward and x in task.grad_inputs
        if task.backward and (not backward or out.op != "cumsum" or out.args[0].op != "input"):
            return None
        return Match(self, task, model, {"op": out.op, "pre": out.args[0], "x": x,
                                         "scalars": scalars_of(out.args[0]), "backward": backward,
                                         "flops": flops_per_element(out.args[0])},
                     summary=f"row {out.op} over the last dimension, {'forward + backward' if backward else 'forward'}")

    def knobs(self, match: Match) -> list[KnobSpec]:
        return KNOBS

    def presets(self, match: Match) -> list[dict[str, int]]:
        return [{"CHUNK": 2048, "TILE": 8192, "NUM_WARPS": 8}, {"CHUNK": 512, "TILE": 2048}]

    def render(self, match: Match, params: dict[str, int]) -> str:
        spec = match.spec
        ident, body = _SCANS[spec["op"]]
        scalars = spec["scalars"]
        sargs = "".join(f", s_{s}" for s in scalars)
        hargs = "".join(f", {s}" for s in scalars)
        pre_lines, z, helpers = value_code(spec["pre"], False, "        ")
        kernels = f'''
@triton.jit
def _combine(a, b):
    {body}


@triton.jit
def _total_kernel(x_ptr, tot_ptr, n_rows, n_cols, seg_len, n_splits{sargs}, BLOCK_R: tl.constexpr,
                  BLOCK_C: tl.constexpr):
    # split rows, first pass: each segment's combined total (fp32), read once
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    split = tl.program_id(1)
    start = split * seg_len
    end = tl.minimum(start + seg_len, n_cols)
    rmask = rows < n_rows
    base = rows.to(tl.int64)[:, None] * n_cols
    carry = tl.full([BLOCK_R], {ident}, tl.float32)
    for c0 in range(start, end, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        mask = rmask[:, None] & (cols[None, :] < end)
        x = tl.load(x_ptr + base + cols[None, :], mask=mask, other=0.0).to(tl.float32)
{pre_lines}        v = tl.where(mask, {z}, {ident})
        carry = _combine(carry, tl.reduce(v, 1, _combine))
    tl.store(tot_ptr + rows * n_splits + split, carry, mask=rmask)


@triton.jit
def _scan_kernel(x_ptr, y_ptr, tot_ptr, n_rows, n_cols, seg_len, n_splits{sargs}, BLOCK_R: tl.constexpr,
                 BLOCK_C: tl.constexpr):
    # BLOCK_R rows x one segment per program: the scan of each chunk, combined with the running value
    # of the chunks (and, split rows, the segments' totals) before it; reads x once, writes y once
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    split = tl.program_id(1)
    start = split * seg_len
    end = tl.minimum(start + seg_len, n_cols)
    rmask = rows < n_rows
    base = rows.to(tl.int64)[:, None] * n_cols
    carry = tl.full([BLOCK_R], {ident}, tl.float32)
    for s in range(0, split):
        carry = _combine(carry, tl.load(tot_ptr + rows * n_splits + s, mask=rmask, other={ident}))
    for c0 in range(start, end, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        mask = rmask[:, None] & (cols[None, :] < end)
        x = tl.load(x_ptr + base + cols[None, :], mask=mask, other=0.0).to(tl.float32)
{pre_lines}        v = tl.where(mask, {z}, {ident})
        c = tl.associative_scan(v, 1, _combine)
        tl.store(y_ptr + base + cols[None, :], _combine(carry[:, None], c).to(y_ptr.dtype.element_ty), mask=mask)
        carry = _combine(carry, tl.reduce(v, 1, _combine))
'''
        host = ROWS_HOST + f'''
def _tile(n_rows, n_cols):
    """Rows per program and columns per step."""
    block_c = max(16, min(CHUNK, triton.next_power_of_2(max(n_cols, 1))))
    block_r = max(1, min(TILE // block_c, triton.next_power_of_2(max(n_rows, 1))))
    return block_r, block_c


def _scan(x{hargs}):
    x2, n_rows, n_cols = _rows(x)
    y = torch.empty_like(x2)
    if n_rows and n_cols:
        block_r, block_c = _tile(n_rows, n_cols)
        programs = triton.cdiv(n_rows, block_r)
        splits = 1
        if programs < TARGET_PROGRAMS and n_cols > MIN_SEGMENT:  # few long rows: split them
            splits = min(triton.cdiv(n_cols, MIN_SEGMENT), triton.cdiv(TARGET_PROGRAMS, programs))
        seg_len = triton.cdiv(triton.cdiv(n_cols, splits), block_c) * block_c
        splits = max(1, triton.cdiv(n_cols, seg_len))
        tot = torch.empty((n_rows, splits) if splits > 1 else (1,), dtype=torch.float32, device=x.device)
        if splits > 1:
            _total_kernel[(programs, splits)](x2, tot, n_rows, n_cols, seg_len, splits{hargs}, BLOCK_R=block_r,
                                              BLOCK_C=block_c, num_warps=NUM_WARPS)
        _scan_kernel[(programs, splits)](x2, y, tot, n_rows, n_cols, seg_len, splits{hargs}, BLOCK_R=block_r,
                                         BLOCK_C=block_c, num_warps=NUM_WARPS)
    return y.view(x.shape)
'''
        args = ", ".join([spec["x"], *(f"float(self.{s})" for s in scalars)])
        body = f"return _scan({args})"
        if spec["backward"]:
            kernels += '''

@triton.jit
def _scan_backward_kernel(dy_ptr, dx_ptr, n_rows, n_cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    # dx = the reversed cumulative sum of dy: each row's chunks from the last, one read and one write
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = rows < n_rows
    base = rows.to(tl.int64)[:, None] * n_cols
    n_chunks = tl.cdiv(n_cols, BLOCK_C)
    carry = tl.zeros([BLOCK_R], dtype=tl.float32)
    for i in range(0, n_chunks):
        cols = (n_chunks - 1 - i) * BLOCK_C + tl.arange(0, BLOCK_C)
        mask = rmask[:, None] & (cols[None, :] < n_cols)
        g = tl.load(dy_ptr + base + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        c = tl.associative_scan(g, 1, _combine, reverse=True)
        tl.store(dx_ptr + base + cols[None, :], (c + carry[:, None]).to(dx_ptr.dtype.element_ty), mask=mask)
        carry += tl.sum(g, axis=1)
'''
            host += '''

class _Scan(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return _scan(x)

    @staticmethod
    def backward(ctx, dy):
        dy2, n_rows, n_cols = _rows(dy)
        dx = torch.empty_like(dy2)
        if n_rows and n_cols:
            block_r, block_c = _tile(n_rows, n_cols)
            _scan_backward_kernel[(triton.cdiv(n_rows, block_r),)](dy2, dx, n_rows, n_cols, BLOCK_R=block_r,
                                                                    BLOCK_C=block_c, num_warps=NUM_WARPS)
        return dx.view(dy.shape)
'''
            body = f"return _Scan.apply({args})"
        doc = f"Template `scan` for {match.task.id}: {match.summary}.\n\n" + (__doc__ or "").split("\n\n", 1)[1]
        return assemble(doc, match, params, helper_source(helpers) + kernels, host, body)
