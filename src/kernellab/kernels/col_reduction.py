"""Column reductions of a 2-D input (over its leading dimension, ``x.sum(0)``): sum, mean, amax, amin,
var, std (any Bessel correction), argmax, argmin and counts, after an optional elementwise pre-op;
forward.

Budget per call, ``M`` rows of ``N``, ``f`` FLOPs per element of the pre-op:
  forward   reads M·N·elem once, writes N·elem (N·8 bytes for indices and counts); (f + 1)·M·N FLOPs
            (var/std: 4·M·N; argmax/argmin: 3·M·N). A program owns BLOCK_C adjacent columns (each row's
            piece is one coalesced read) and walks a segment of the rows BLOCK_R at a time, keeping a
            [BLOCK_R, BLOCK_C] fp32 accumulator. The rows are split into segments until about
            TARGET_PROGRAMS programs run (no shorter than MIN_SEGMENT rows); each segment writes fp32
            partials (S·N·4 bytes, S·N·8 for the arg-extremes), merged per column in a fixed order by a
            second kernel (deterministic, no atomics).
"""

from __future__ import annotations

from kernellab.kernels.reduce_kinds import KINDS, fill, kind
from kernellab.kernels.reduction import pre_chain, value_code
from kernellab.kernels.reference_model import ReferenceModel
from kernellab.kernels.rows import scalars_of
from kernellab.kernels.template import KnobSpec, Match, Template, assemble, register_template
from kernellab.kernels.triton_expr import flops_per_element, helper_source
from kernellab.tasks.model import Task

KNOBS = [
    KnobSpec("BLOCK_C", 256, "16..1024", "columns per program (the width of each coalesced row read)"),
    KnobSpec("TILE", 8192, "1024..16384", "accumulator elements per program (rows x columns)"),
    KnobSpec("NUM_WARPS", 8, "1,2,4,8,16", "warps per program"),
    KnobSpec("MIN_SEGMENT", 128, "16..8192", "fewest rows a program walks when rows are split"),
    KnobSpec("TARGET_PROGRAMS", 1024, "128..8192", "split the rows until about this many programs run"),
]


def _leading(dim) -> bool:
    if isinstance(dim, (tuple, list)) and len(dim) == 1:
        dim = dim[0]
    return dim in (0, -2)


@register_template("col_reduction")
class ColReductionTemplate(Template):
    categories = frozenset({"reductions", "fusion"})
    budget = __doc__

    def match(self, task: Task, model: ReferenceModel) -> Match | None:
        if len(model.outputs) != 1 or task.backward:
            return None
        out = model.outputs[0]
        if out.op not in KINDS or {k for k, _ in out.kw} - {"dim", "keepdim", "correction"} \
                or out.const("keepdim", False) not in (True, False) or not _leading(out.const("dim", None)):
            return None
        pre = out.args[0]
        found = pre_chain(pre, model)
        if found is None or model.input_ranks.get(found[0]) != 2:
            return None
        x, counted = found
        name = "count" if counted else out.op
        if (counted and out.op != "sum") or (name in ("var", "std") and pre.op != "input"):
            return None
        return Match(self, task, model, {"kind": name, "correction": out.const("correction", 1), "pre": pre,
                                         "counted": counted, "x": x, "scalars": scalars_of(pre),
                                         "keepdim": bool(out.const("keepdim", False)),
                                         "flops": flops_per_element(pre)},
                     summary=f"column {name} over the leading dimension, forward")

    def knobs(self, match: Match) -> list[KnobSpec]:
        return KNOBS

    def presets(self, match: Match) -> list[dict[str, int]]:
        return [{"BLOCK_C": 512, "TILE": 16384, "NUM_WARPS": 16}, {"BLOCK_C": 128, "TILE": 4096, "NUM_WARPS": 4}]

    def render(self, match: Match, params: dict[str, int]) -> str:
        spec = match.spec
        k = kind(spec["kind"], spec["correction"])
        scalars = spec["scalars"]
        sargs = "".join(f", s_{s}" for s in scalars)
        hargs = "".join(f", {s}" for s in scalars)
        pre_lines, z, helpers = value_code(spec["pre"], spec["counted"], "        ")

        def tail(indent: str) -> str:
            return fill(k.finish, indent, axis=0) + \
                f"\n{indent}tl.store(out_ptr + cols, r.to(out_ptr.dtype.element_ty), mask=omask)"

        p2_store = "\n        tl.store(part2_ptr + split * n_cols + cols, p2, mask=omask)" if k.two else ""
        q2_load = (f"\n        q2 = tl.load(part2_ptr + s * n_cols + cols, mask=omask, other="
                   f"{'0' if k.index else '0.0'})") if k.two else ""
        kernels = f'''
@triton.jit
def _reduce_kernel(x_ptr, out_ptr, part_ptr, part2_ptr, n_rows, n_cols, seg_len{sargs}, BLOCK_R: tl.constexpr,
                   BLOCK_C: tl.constexpr, SPLIT: tl.constexpr):
    # BLOCK_C columns x one segment of rows per program, BLOCK_R rows a step: reads x once, writes one
    # value per column (or, SPLIT, partials per column segment)
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    split = tl.program_id(1)
    start = split * seg_len
    end = tl.minimum(start + seg_len, n_rows)
    omask = cols < n_cols
    n_red = n_rows
{fill(k.init, "    ", axis=0)}
    for r0 in range(start, end, BLOCK_R):
        rows = r0 + tl.arange(0, BLOCK_R)
        mask = (rows[:, None] < end) & omask[None, :]
        x = tl.load(x_ptr + rows.to(tl.int64)[:, None] * n_cols + cols[None, :], mask=mask, other=0.0).to(tl.float32)
{pre_lines}{fill(k.update, "        ", axis=0, z=z)}
{fill(k.segment, "    ", axis=0)}
    if SPLIT:
        tl.store(part_ptr + split * n_cols + cols, p1, mask=omask){p2_store}
    else:
{tail("        ")}


@triton.jit
def _combine_kernel(part_ptr, part2_ptr, out_ptr, n_rows, n_cols, n_splits, BLOCK_O: tl.constexpr):
    # the segments' partials of each column, merged in a fixed order: one value per column
    cols = tl.program_id(0) * BLOCK_O + tl.arange(0, BLOCK_O)
    omask = cols < n_cols
    n_red = n_rows
{fill(k.start, "    ", axis=0)}
    for s in range(0, n_splits):
        q1 = tl.load(part_ptr + s * n_cols + cols, mask=omask, other=0.0){q2_load}
{fill(k.merge, "        ", axis=0)}
{tail("    ")}
'''
        keep = "(1, n_cols)" if spec["keepdim"] else "(n_cols,)"
        out_dtype = "torch.int64" if k.integer else "x.dtype"
        part2 = (f"torch.empty((splits, n_cols) if splits > 1 else (1,), dtype="
                 f"{'torch.int32' if k.index else 'torch.float32'}, device=x.device)") if k.two else "part"
        host = f'''
def _reduce(x{hargs}):
    if x.dim() != 2:
        raise ValueError(f"col_reduction: a 2-D input, not {{x.dim()}}-D")
    x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty(n_cols, dtype={out_dtype}, device=x.device)
    if n_cols:
        block_c = max(16, min(BLOCK_C, triton.next_power_of_2(n_cols)))
        block_r = max(1, min(TILE // block_c, triton.next_power_of_2(max(n_rows, 1))))
        programs = triton.cdiv(n_cols, block_c)
        splits = 1
        if programs < TARGET_PROGRAMS and n_rows > MIN_SEGMENT:  # few column blocks: split the rows
            splits = min(triton.cdiv(n_rows, MIN_SEGMENT), triton.cdiv(TARGET_PROGRAMS, programs))
        seg_len = triton.cdiv(triton.cdiv(max(n_rows, 1), splits), block_r) * block_r
        splits = max(1, triton.cdiv(n_rows, seg_len))
        part = torch.empty((splits, n_cols) if splits > 1 else (1,), dtype=torch.float32, device=x.device)
        part2 = {part2}
        _reduce_kernel[(programs, splits)](x, out, part, part2, n_rows, n_cols, seg_len{hargs}, BLOCK_R=block_r,
                                           BLOCK_C=block_c, SPLIT=splits > 1, num_warps=NUM_WARPS)
        if splits > 1:
            block_o = max(16, min(1024, triton.next_power_of_2(n_cols)))
            _combine_kernel[(triton.cdiv(n_cols, block_o),)](part, part2, out, n_rows, n_cols, splits,
                                                             BLOCK_O=block_o, num_warps=4)
    return out.view({keep})
'''
        args = ", ".join([spec["x"], *(f"float(self.{s})" for s in scalars)])
        doc = f"Template `col_reduction` for {match.task.id}: {match.summary}.\n\n" + \
            (__doc__ or "").split("\n\n", 1)[1]
        return assemble(doc, match, params, helper_source(helpers) + kernels, host, f"return _reduce({args})")
