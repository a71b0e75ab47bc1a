"""Row reductions over the last dimension: sum, mean, amax, amin, var, std (any Bessel correction),
argmax, argmin, and counts (``(x > 0).sum(-1)``), after an optional elementwise pre-op on the input
(``x.abs().amax(-1)``) and before an optional elementwise post-op of the result
(``x.square().sum(-1).sqrt()``, which is how the reader writes ``torch.linalg.vector_norm``); forward,
and backward for sum and mean (through both chains).

Budget per call, ``M`` rows of ``N``, ``f`` FLOPs per element of the pre-op:
  forward   reads M·N·elem once, writes M·elem (M·8 bytes for indices and counts); (f + 1)·M·N FLOPs
            (var/std: 4·M·N; argmax/argmin: 3·M·N). A program owns BLOCK_R rows and walks them in
            BLOCK_C-wide chunks, keeping a [BLOCK_R, BLOCK_C] fp32 accumulator (two for var/std and the
            arg-extremes). Few long rows are split over programs (fp32 partials per segment, merged in a
            fixed order by a second small kernel). With a post-op and a backward, the M fp32 reduced
            values are kept for the backward (M·4 bytes).
  backward  (sum, mean) reads dy (M·elem), the kept values and, with a pre-op, x (M·N·elem); writes dx
            (M·N·elem); about (2f + 1)·M·N FLOPs.
"""

from __future__ import annotations

from dataclasses import replace

from kernellab.kernels.reduce_kinds import KINDS, fill, kind
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
    is_elementwise,
)
from kernellab.tasks.model import Task

KNOBS = [
    KnobSpec("CHUNK", 1024, "128..8192", "columns per step of the reduction"),
    KnobSpec("TILE", 4096, "512..16384", "accumulator elements per program (rows x chunk)"),
    KnobSpec("NUM_WARPS", 4, "1,2,4,8,16", "warps per program"),
    KnobSpec("MIN_SEGMENT", 16384, "4096..131072", "shortest row segment when few long rows are split"),
    KnobSpec("TARGET_PROGRAMS", 512, "128..8192", "split long rows when fewer programs than this would run"),
]
COMPARES = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
REDUCED = "__reduced"  # the leaf standing for the reduction's value in a post-op chain


def split_post(out: Node) -> tuple[Node, Node | None] | None:
    """(the reduction, the post-op chain over it with the reduction as an ``input`` leaf ``REDUCED``):
    ``out`` itself with no post-op, or the one reduction node an elementwise chain is made of."""
    if out.op in KINDS:
        return out, None
    found = {n for n in out.walk() if n.op in KINDS}
    if len(found) != 1:
        return None
    red = found.pop()

    def swap(node: Node) -> Node:
        if node == red:
            return Node("input", name=REDUCED)
        return replace(node, args=tuple(swap(a) for a in node.args), kw=tuple((k, swap(v)) for k, v in node.kw))

    post = swap(out)
    leaves_ok = is_elementwise(post, lambda leaf: leaf.op == "scalar" or (leaf.op == "input" and leaf.name == REDUCED))
    return (red, post) if leaves_ok else None


def pre_chain(pre: Node, model: ReferenceModel) -> tuple[str, bool] | None:
    """(the one input, whether ``pre`` is a comparison counted as 0/1) when ``pre`` is an elementwise chain
    over one input, or a comparison of such chains and numbers."""
    if pre.op in COMPARES:
        names = {single_input_chain(a, model) for a in pre.args if a.op not in ("const", "scalar")}
        if len(names) != 1 or None in names or any(a.op == "const" and not isinstance(a.value, (int, float))
                                                   for a in pre.args):
            return None
        if not all(a.op in ("const", "scalar") or single_input_chain(a, model) for a in pre.args):
            return None
        return names.pop(), True
    x = single_input_chain(pre, model)
    return (x, False) if x is not None else None


def value_code(pre: Node, counted: bool, indent: str) -> tuple[str, str, set[str]]:
    """Statements computing the reduced value from the loaded ``x`` (fp32), its name, the helpers used."""
    if pre.op == "input":
        return "", "x", set()
    expr = TritonExpr(chain_leaf, indent=indent, prefix="z")
    if counted:
        a, b = (expr.value(arg) for arg in pre.args)
        z = f"tl.where({a} {COMPARES[pre.op]} {b}, 1.0, 0.0)"
    else:
        z = expr.value(pre)
    return expr.code() + "\n", z, expr.helpers


def post_code(post: Node | None, indent: str) -> tuple[str, str, set[str]]:
    """Statements computing the output from the reduced value ``r``, its name, the helpers used."""
    if post is None:
        return "", "r", set()
    expr = TritonExpr(lambda leaf: "r" if leaf.op == "input" else f"s_{leaf.name}", indent=indent, prefix="w")
    out = expr.value(post)
    return expr.code() + "\n", out, expr.helpers


@register_template("row_reduction")
class RowReductionTemplate(Template):
    categories = frozenset({"reductions", "fusion"})
    budget = __doc__

    def match(self, task: Task, model: ReferenceModel) -> Match | None:
        if len(model.outputs) != 1:
            return None
        parts = split_post(model.outputs[0])
        if parts is None:
            return None
        out, post = parts
        if {k for k, _ in out.kw} - {"dim", "keepdim", "correction"} or out.const("keepdim", False) not in (True, False):
            return None
        pre = out.args[0]
        found = pre_chain(pre, model)
        if found is None or not last_dim(out, model, found[0]):
            return None
        x, counted = found
        name = "count" if counted else out.op
        if (counted and out.op != "sum") or (name in ("var", "std") and pre.op != "input"):
            return None
        spec = kind(name, out.const("correction", 1))
        if post is not None and (spec.integer or not is_elementwise(post, lambda leaf: True)):
            return None
        backward = task.backward and x in task.grad_inputs
        if task.backward and (not backward or not spec.differentiable):
            return None
        if backward:
            try:
                if pre.op != "input":
                    TritonExpr(chain_leaf).grad(pre, Node("input", name=x))
                if post is not None:
                    TritonExpr(lambda leaf: "r").grad(post, Node("input", name=REDUCED))
            except NotElementwise:
                return None
        scalars = scalars_of(pre) + [s for s in scalars_of(post or pre) if s not in scalars_of(pre)]
        what = f"{name}{' then a post-op' if post is not None else ''} over the last dimension"
        return Match(self, task, model, {"kind": name, "correction": out.const("correction", 1), "pre": pre,
                                         "post": post, "counted": counted, "x": x, "scalars": scalars,
                                         "keepdim": bool(out.const("keepdim", False)), "backward": backward,
                                         "flops": flops_per_element(pre)},
                     summary=f"row {what}, {'forward + backward' if backward else 'forward'}")

    def knobs(self, match: Match) -> list[KnobSpec]:
        return KNOBS

    def presets(self, match: Match) -> list[dict[str, int]]:
        return [{"CHUNK": 2048, "TILE": 8192, "NUM_WARPS": 8}, {"CHUNK": 512, "TILE": 2048}]

    def render(self, match: Match, params: dict[str, int]) -> str:
        spec = match.spec
        k = kind(spec["kind"], spec["correction"])
        pre, post, x, scalars = spec["pre"], spec["post"], spec["x"], spec["scalars"]
        save_r = spec["backward"] and post is not None
        sargs = "".join(f", s_{s}" for s in scalars)
        hargs = "".join(f", {s}" for s in scalars)
        pre_lines, z, helpers = value_code(pre, spec["counted"], "        ")
        post_lines, res, post_helpers = post_code(post, "        ")
        helpers |= post_helpers

        def tail(indent: str) -> str:  # the result from p1 (, p2), kept and stored
            code = fill(k.finish, indent, axis=1) + "\n"
            if save_r:
                code += f"{indent}tl.store(r_ptr + rows, r, mask=omask)\n"
            code += "".join(indent + line.strip() + "\n" for line in post_lines.split("\n") if line.strip())
            return code + f"{indent}tl.store(out_ptr + rows, ({res}).to(out_ptr.dtype.element_ty), mask=omask)"

        p2_store = "\n        tl.store(part2_ptr + rows * n_splits + split, p2, mask=omask)" if k.two else ""
        q2_load = (f"\n        q2 = tl.load(part2_ptr + rows * n_splits + s, mask=omask, other="
                   f"{'0' if k.index else '0.0'})") if k.two else ""
        kernels = f'''
@triton.jit
def _reduce_kernel(x_ptr, out_ptr, part_ptr, part2_ptr, r_ptr, n_rows, n_cols, seg_len, n_splits{sargs},
                   BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr, SPLIT: tl.constexpr):
    # BLOCK_R rows x one segment per program, walked in BLOCK_C-wide chunks: reads x once, writes one
    # value per row (or, SPLIT, partials per row segment)
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    split = tl.program_id(1)
    start = split * seg_len
    end = tl.minimum(start + seg_len, n_cols)
    omask = rows < n_rows
    n_red = n_cols
    base = rows.to(tl.int64)[:, None] * n_cols
{fill(k.init, "    ", axis=1)}
    for c0 in range(start, end, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        mask = omask[:, None] & (cols[None, :] < end)
        x = tl.load(x_ptr + base + cols[None, :], mask=mask, other=0.0).to(tl.float32)
{pre_lines}{fill(k.update, "        ", axis=1, z=z)}
{fill(k.segment, "    ", axis=1)}
    if SPLIT:
        tl.store(part_ptr + rows * n_splits + split, p1, mask=omask){p2_store}
    else:
{tail("        ")}


@triton.jit
def _combine_kernel(part_ptr, part2_ptr, out_ptr, r_ptr, n_rows, n_cols, n_splits{sargs}, BLOCK_O: tl.constexpr):
    # the segments' partials of split rows, merged in a fixed order: one value per row
    rows = tl.program_id(0) * BLOCK_O + tl.arange(0, BLOCK_O)
    omask = rows < n_rows
    n_red = n_cols
{fill(k.start, "    ", axis=1)}
    for s in range(0, n_splits):
        q1 = tl.load(part_ptr + rows * n_splits + s, mask=omask, other=0.0){q2_load}
{fill(k.merge, "        ", axis=1)}
{tail("    ")}
'''
        keep = "(1,)" if spec["keepdim"] else "()"
        out_dtype = "torch.int64" if k.integer else "x.dtype"
        part2 = ("torch.empty((n_rows, splits) if splits > 1 else (1,), dtype="
                 f"{'torch.int32' if k.index else 'torch.float32'}, device=x.device)") if k.two else "part"
        host = ROWS_HOST + f'''
def _tile(n_rows, n_cols):
    """Rows per program and columns per step."""
    block_c = max(16, min(CHUNK, triton.next_power_of_2(n_cols)))
    block_r = max(1, min(TILE // block_c, triton.next_power_of_2(n_rows)))
    return block_r, block_c


def _reduce(x{hargs}):
    """The output and, when a backward needs them, the fp32 reduced values before the post-op."""
    x2, n_rows, n_cols = _rows(x)
    out = torch.empty(n_rows, dtype={out_dtype}, device=x.device)
    r = torch.empty(n_rows, dtype=torch.float32, device=x.device) if {save_r} else None
    kept = out if r is None else r
    if n_rows:
        block_r, block_c = _tile(n_rows, n_cols)
        programs = triton.cdiv(n_rows, block_r)
        splits = 1
        if programs < TARGET_PROGRAMS and n_cols > MIN_SEGMENT:  # few long rows: split them
            splits = min(triton.cdiv(n_cols, MIN_SEGMENT), triton.cdiv(TARGET_PROGRAMS, programs))
        seg_len = triton.cdiv(triton.cdiv(max(n_cols, 1), splits), block_c) * block_c
        splits = max(1, triton.cdiv(n_cols, seg_len))
        part = torch.empty((n_rows, splits) if splits > 1 else (1,), dtype=torch.float32, device=x.device)
        part2 = {part2}
        _reduce_kernel[(programs, splits)](x2, out, part, part2, kept, n_rows, n_cols, seg_len, splits{hargs},
                                           BLOCK_R=block_r, BLOCK_C=block_c, SPLIT=splits > 1, num_warps=NUM_WARPS)
        if splits > 1:
            block_o = max(1, min(256, triton.next_power_of_2(n_rows)))
            _combine_kernel[(triton.cdiv(n_rows, block_o),)](part, part2, out, kept, n_rows, n_cols, splits{hargs},
                                                             BLOCK_O=block_o, num_warps=4)
    return out.view(tuple(x.shape[:-1]) + {keep}), r
'''
        args = ", ".join([x, *(f"float(self.{s})" for s in scalars)])
        body = f"return _reduce({args})[0]"
        if spec["backward"]:
            k2, h2, hl = _backward(spec, sargs, hargs, save_r)
            kernels += k2
            host += h2
            helpers |= hl
            body = f"return _Reduce.apply({args})"
        doc = f"Template `row_reduction` for {match.task.id}: {match.summary}.\n\n" + \
            (__doc__ or "").split("\n\n", 1)[1]
        return assemble(doc, match, params, helper_source(helpers) + kernels, host, body)


def _backward(spec: dict, sargs: str, hargs: str, save_r: bool) -> tuple[str, str, set[str]]:
    pre, post, x, scalars = spec["pre"], spec["post"], spec["x"], spec["scalars"]
    scale = " / n_cols" if spec["kind"] == "mean" else ""
    grad_code, g = "", "1.0"
    helpers: set[str] = set()
    if pre.op != "input":
        expr = TritonExpr(chain_leaf, indent="    ", prefix="g")
        g = expr.grad(pre, Node("input", name=x)) or "0.0"
        grad_code = "    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)\n" + expr.code() + "\n"
        helpers |= expr.helpers
    post_grad = ""
    if post is not None:
        expr = TritonExpr(lambda leaf: "r" if leaf.op == "input" else f"s_{leaf.name}", indent="    ", prefix="q")
        dpost = expr.grad(post, Node("input", name=REDUCED)) or "0.0"
        # an infinite derivative of the post-op (sqrt at a zero sum of squares) counts as 0, as
        # torch.linalg.vector_norm's gradient at a zero row is; a constant derivative is a plain factor
        try:
            scale_by = f"    dy = dy * {float(dpost)!r}\n"
        except ValueError:
            scale_by = f"    dpost = {dpost}\n    dy = tl.where(tl.abs(dpost) < float(\"inf\"), dy * dpost, 0.0)\n"
        post_grad = "    r = tl.load(r_ptr + rows, mask=rmask, other=1.0)\n" + expr.code() + "\n" + scale_by
        helpers |= expr.helpers
    kernel = f'''

@triton.jit
def _reduce_backward_kernel(dy_ptr, x_ptr, r_ptr, dx_ptr, n_rows, n_cols{sargs}, BLOCK_R: tl.constexpr,
                            BLOCK_C: tl.constexpr):
    # one [BLOCK_R, BLOCK_C] tile of dx: the row's dy (through the post-op) broadcast over its columns
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    rmask = rows < n_rows
    mask = rmask[:, None] & (cols[None, :] < n_cols)
    offs = rows.to(tl.int64)[:, None] * n_cols + cols[None, :]
    dy = tl.load(dy_ptr + rows, mask=rmask, other=0.0).to(tl.float32){scale}
{post_grad}{grad_code}    dx = dy[:, None] * {g}
    tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)
'''
    host = f'''

class _Reduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x{hargs}):
        out, r = _reduce(x{hargs})
        ctx.save_for_backward(x, r)
        ctx.scalars = ({"".join(s + ", " for s in scalars)})
        return out

    @staticmethod
    def backward(ctx, dy):
        x, r = ctx.saved_tensors
        x2, n_rows, n_cols = _rows(x)
        dy = dy.contiguous()
        dx = torch.empty_like(x2)
        if n_rows and n_cols:
            block_r, block_c = _tile(n_rows, n_cols)
            grid = (triton.cdiv(n_rows, block_r), triton.cdiv(n_cols, block_c))
            _reduce_backward_kernel[grid](dy, x2, x2 if r is None else r, dx, n_rows, n_cols, *ctx.scalars, BLOCK_R=block_r, BLOCK_C=block_c,
                                          num_warps=NUM_WARPS)
        return (dx.view(x.shape),) + (None,) * len(ctx.scalars)
'''
    return kernel, host, helpers
