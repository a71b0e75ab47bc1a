"""Row reductions over the last dimension: sum, mean, amax, amin, after an optional elementwise pre-op
on the input (``x.abs().amax(-1)``), forward and (sum, mean) backward.

Budget per call, ``M`` rows of ``N``, ``f`` FLOPs per element of the pre-op:
  forward   reads M·N·elem once, writes M·elem; (f + 1)·M·N FLOPs. A program owns BLOCK_R rows and
            walks them in BLOCK_C-wide chunks, keeping a [BLOCK_R, BLOCK_C] fp32 accumulator. Few long
            rows are split over programs (fp32 partial per segment, combined by a second small kernel).
  backward  (sum, mean) reads dy (M·elem) and, with a pre-op, x (M·N·elem); writes dx (M·N·elem);
            about (2f + 1)·M·N FLOPs.
"""

from __future__ import annotations

from kernellab.kernels.reference_model import Node, ReferenceModel
from kernellab.kernels.rows import (
    ROWS_HOST,
    chain_leaf,
    last_dim,
    scalars_of,
    single_input_chain,
)
from kernellab.kernels.template import (
    KnobSpec,
    Match,
    Template,
    assemble,
    register_template,
)
from kernellab.kernels.triton_expr import (
    NotElementwise,
    TritonExpr,
    flops_per_element,
    helper_source,
)
from kernellab.tasks.model import Task

KNOBS = [
    KnobSpec("CHUNK", 1024, "128..8192", "columns per step of the reduction"),
    KnobSpec("TILE", 4096, "512..16384", "accumulator elements per program (rows x chunk)"),
    KnobSpec("NUM_WARPS", 4, "1,2,4,8,16", "warps per program"),
    KnobSpec("MIN_SEGMENT", 16384, "4096..131072", "shortest row segment when few long rows are split"),
    KnobSpec("TARGET_PROGRAMS", 512, "128..8192", "split long rows when fewer programs than this would run"),
]
_KINDS = {"sum": ("0.0", "tl.sum"), "mean": ("0.0", "tl.sum"), "amax": ('float("-inf")', "tl.max"),
          "amin": ('float("inf")', "tl.min")}


@register_template("row_reduction")
class RowReductionTemplate(Template):
    categories = frozenset({"reductions", "fusion"})
    budget = __doc__

    def match(self, task: Task, model: ReferenceModel) -> Match | None:
        if len(model.outputs) != 1 or model.outputs[0].op not in _KINDS:
            return None
        out = model.outputs[0]
        if {k for k, _ in out.kw} - {"dim", "keepdim"} or out.const("keepdim", False) not in (True, False):
            return None
        pre = out.args[0]
        x = single_input_chain(pre, model)
        if x is None or not last_dim(out, model, x):
            return None
        backward = task.backward and x in task.grad_inputs
        if task.backward and (not backward or out.op not in ("sum", "mean")):
            return None
        if backward and pre.op != "input":
            try:
                TritonExpr(chain_leaf).grad(pre, Node("input", name=x))
            except NotElementwise:
                return None
        return Match(self, task, model, {"kind": out.op, "pre": pre, "x": x, "scalars": scalars_of(pre),
                                         "keepdim": bool(out.const("keepdim", False)), "backward": backward,
                                         "flops": flops_per_element(pre)},
                     summary=f"row {out.op} over the last dimension, {'forward + backward' if backward else 'forward'}")

    def knobs(self, match: Match) -> list[KnobSpec]:
        return KNOBS

    def presets(self, match: Match) -> list[dict[str, int]]:
        return [{"CHUNK": 2048, "TILE": 8192, "NUM_WARPS": 8}, {"CHUNK": 512, "TILE": 2048}]

    def render(self, match: Match, params: dict[str, int]) -> str:
        spec = match.spec
        kind, pre, x, scalars = spec["kind"], spec["pre"], spec["x"], spec["scalars"]
        sargs = "".join(f", s_{s}" for s in scalars)
        hargs = "".join(f", {s}" for s in scalars)
        helpers: set[str] = set()
        pre_code, z = "", "x"
        if pre.op != "input":
            expr = TritonExpr(chain_leaf, indent="        ", prefix="z")
            z = expr.value(pre)
            pre_code = expr.code() + "\n"
            helpers |= expr.helpers
        init, reduce = _KINDS[kind]
        if kind in ("sum", "mean"):
            update = f"acc += tl.where(mask, {z}, 0.0)"
        else:
            update = f"acc = tl.{'maximum' if kind == 'amax' else 'minimum'}(acc, tl.where(mask, {z}, {init}))"
        result = "tl.sum(acc, axis=1) / n_cols" if kind == "mean" else f"{reduce}(acc, axis=1)"
        combined = "tl.sum(p, axis=1) / n_cols" if kind == "mean" else f"{reduce}(p, axis=1)"
        kernels = f'''
@triton.jit
def _reduce_kernel(x_ptr, out_ptr, part_ptr, n_rows, n_cols, seg_len, n_splits{sargs}, BLOCK_R: tl.constexpr,
                   BLOCK_C: tl.constexpr, SPLIT: tl.constexpr):
    # BLOCK_R rows x one segment per program, walked in BLOCK_C-wide chunks: reads x once, writes one
    # value per row (or, SPLIT, an fp32 partial per row segment)
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    split = tl.program_id(1)
    start = split * seg_len
    end = tl.minimum(start + seg_len, n_cols)
    rmask = rows < n_rows
    base = rows.to(tl.int64)[:, None] * n_cols
    acc = tl.full([BLOCK_R, BLOCK_C], {init}, tl.float32)
    for c0 in range(start, end, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        mask = rmask[:, None] & (cols[None, :] < end)
        x = tl.load(x_ptr + base + cols[None, :], mask=mask, other=0.0).to(tl.float32)
{pre_code}        {update}
    if SPLIT:
        tl.store(part_ptr + rows * n_splits + split, {reduce}(acc, axis=1), mask=rmask)
    else:
        tl.store(out_ptr + rows, ({result}).to(out_ptr.dtype.element_ty), mask=rmask)


@triton.jit
def _combine_kernel(part_ptr, out_ptr, n_rows, n_cols, n_splits, BLOCK_R: tl.constexpr, BLOCK_S: tl.constexpr):
    # the segments' partials of split rows, in a fixed order: one value per row
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    idx = tl.arange(0, BLOCK_S)
    rmask = rows < n_rows
    mask = rmask[:, None] & (idx < n_splits)[None, :]
    p = tl.load(part_ptr + rows[:, None] * n_splits + idx[None, :], mask=mask, other={init})
    tl.store(out_ptr + rows, ({combined}).to(out_ptr.dtype.element_ty), mask=rmask)
'''
        keep = "(1,)" if spec["keepdim"] else "()"
        host = ROWS_HOST + f'''
def _tile(n_rows, n_cols):
    """Rows per program and columns per step."""
    block_c = max(16, min(CHUNK, triton.next_power_of_2(n_cols)))
    block_r = max(1, min(TILE // block_c, triton.next_power_of_2(n_rows)))
    return block_r, block_c


def _reduce(x{hargs}):
    x2, n_rows, n_cols = _rows(x)
    out = torch.empty(n_rows, dtype=x.dtype, device=x.device)
    if n_rows:
        block_r, block_c = _tile(n_rows, n_cols)
        programs = triton.cdiv(n_rows, block_r)
        splits = 1
        if programs < TARGET_PROGRAMS and n_cols > MIN_SEGMENT:  # few long rows: split them
            splits = min(triton.cdiv(n_cols, MIN_SEGMENT), triton.cdiv(TARGET_PROGRAMS, programs))
        seg_len = triton.cdiv(triton.cdiv(max(n_cols, 1), splits), block_c) * block_c
        splits = max(1, triton.cdiv(n_cols, seg_len))
        part = torch.empty((n_rows, splits) if splits > 1 else (1,), dtype=torch.float32, device=x.device)
        _reduce_kernel[(programs, splits)](x2, out, part, n_rows, n_cols, seg_len, splits{hargs}, BLOCK_R=block_r,
                                           BLOCK_C=block_c, SPLIT=splits > 1, num_warps=NUM_WARPS)
        if splits > 1:
            block_s = max(2, triton.next_power_of_2(splits))
            block_rc = max(1, min(1024 // block_s, triton.next_power_of_2(n_rows)))
            _combine_kernel[(triton.cdiv(n_rows, block_rc),)](part, out, n_rows, n_cols, splits, BLOCK_R=block_rc,
                                                              BLOCK_S=block_s, num_warps=4)
    return out.view(tuple(x.shape[:-1]) + {keep})
'''
        args = ", ".join([x, *(f"float(self.{s})" for s in scalars)])
        body = f"return _reduce({args})"
        if spec["backward"]:
            k2, h2, hl = _backward(spec, sargs, hargs, keep)
            kernels += k2
            host += h2
            helpers |= hl
            body = f"return _Reduce.apply({args})"
        doc = f"Template `row_reduction` for {match.task.id}: {match.summary}.\n\n" + \
            (__doc__ or "").split("\n\n", 1)[1]
        return assemble(doc, match, params, helper_source(helpers) + kernels, host, body)


def _backward(spec: dict, sargs: str, hargs: str, keep: str) -> tuple[str, str, set[str]]:
    pre, x, scalars = spec["pre"], spec["x"], spec["scalars"]
    scale = " / n_cols" if spec["kind"] == "mean" else ""
    grad_code, g = "", "1.0"
    helpers: set[str] = set()
    if pre.op != "input":
        expr = TritonExpr(chain_leaf, indent="    ", prefix="g")
        g = expr.grad(pre, Node("input", name=x)) or "0.0"
        grad_code = "    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)\n" + expr.code() + "\n"
        helpers |= expr.helpers
    kernel = f'''
@triton.jit
def _reduce_backward_kernel(dy_ptr, x_ptr, dx_ptr, n_rows, n_cols{sargs}, BLOCK_R: tl.constexpr,
                            BLOCK_C: tl.constexpr):
    # one [BLOCK_R, BLOCK_C] tile of dx: the row's dy broadcast over its columns
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    rmask = rows < n_rows
    mask = rmask[:, None] & (cols[None, :] < n_cols)
    offs = rows.to(tl.int64)[:, None] * n_cols + cols[None, :]
    dy = tl.load(dy_ptr + rows, mask=rmask, other=0.0).to(tl.float32){scale}
{grad_code}    dx = dy[:, None] * {g}
    tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)
'''
    host = f'''
class _Reduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x{hargs}):
        ctx.save_for_backward(x)
        ctx.scalars = ({"".join(s + ", " for s in scalars)})
        return _reduce(x{hargs})

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        x2, n_rows, n_cols = _rows(x)
        dy = dy.contiguous()
        dx = torch.empty_like(x2)
        if n_rows and n_cols:
            block_r, block_c = _tile(n_rows, n_cols)
            grid = (triton.cdiv(n_rows, block_r), triton.cdiv(n_cols, block_c))
            _reduce_backward_kernel[grid](dy, x2, dx, n_rows, n_cols, *ctx.scalars, BLOCK_R=block_r, BLOCK_C=block_c,
                                          num_warps=NUM_WARPS)
        return (dx.view(x.shape),) + (None,) * len(ctx.scalars)
'''
    return kernel, host, helpers
