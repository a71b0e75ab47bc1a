"""Rotary position embedding of one or two tensors (queries and keys) in one launch, forward and backward.

Matched from what the reference computes: each output is the rotation of one input's halves,
``(x1·cos − x2·sin, x2·cos + x1·sin)``, written with ``x.chunk(2, -1)`` and ``torch.cat`` (GPT-NeoX /
Llama layout), with even/odd columns and ``torch.stack(...).flatten(-2)`` (GPT-J, interleaved), or as
Hugging Face's ``x * cos + rotate_half(x) * sin`` with full-width tables. The tables are inputs,
broadcast over heads by indexing (``cos[:, None, :]``, ``cos.unsqueeze(1)``), or rows of a cache
picked by position ids (``cache[positions]``, ``[cos | sin]`` halves of one cache). The host replays the
reference's own broadcast on the tables (``expand`` to the rotated tensor's shape) and hands the kernel
the resulting strides, so any layout of tokens and heads the reference broadcasts over is served.

Budget per call, ``E`` elements of the rotated tensors (queries and keys together), ``R`` rows
(head vectors) of ``D`` columns:
  forward   reads E·elem once and R·D table elements (cached in L2: the tables are small), writes
            E·elem; 6 FLOPs per output pair (3·E FLOPs).
  backward  the same kernel rotating the gradients back: reads E·elem, writes E·elem, 3·E FLOPs.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    KnobSpec("ROWS", 16, "1..128", "head vectors (rows) per program"),
    KnobSpec("NUM_WARPS", 4, "1,2,4,8", "warps per program"),
]


class _NotRope(Exception):
    pass


@dataclass(frozen=True)
class Table:
    """Where a cos or sin value comes from: ``source`` (a forward input), rows picked by ``positions``
    (or by the broadcast itself), the broadcast dimensions inserted innermost first, and which half
    of the table row (``None``: the whole row)."""

    source: str
    positions: str | None
    unsqueeze: tuple[int, ...]
    part: int | None


def _table(node: Node, inputs: list[str]) -> Table:
    unsq: list[int] = []
    part = None
    positions = None
    while True:
        if node.op == "unsqueeze":
            unsq.append(node.value)
            node = node.args[0]
        elif node.op == "cols" and part is None and node.value[0] == "chunk" and node.value[2] == 2:
            part = node.value[1]
            node = node.args[0]
        elif node.op == "gather" and positions is None and node.args[1].op == "input":
            positions = node.args[1].name
            node = node.args[0]
        else:
            break
    if node.op != "input" or node.name not in inputs:
        raise _NotRope("a table that is not a forward input")
    if positions is not None and any(d == -1 for d in unsq):
        raise _NotRope("a broadcast after the table's columns")
    return Table(node.name, positions, tuple(reversed(unsq)), part)


def _strip_neg(node: Node) -> tuple[int, Node]:
    sign = 1
    while node.op == "neg":
        sign, node = -sign, node.args[0]
    return sign, node


def _x_part(node: Node) -> tuple[str, str, int] | None:
    if node.op == "cols" and node.args[0].op == "input" and node.value[0] in ("chunk", "every") \
            and node.value[-1] == 2:
        return node.args[0].name, node.value[0], node.value[1]
    return None


def _terms(node: Node, inputs: list[str], sign: int = 1) -> list[tuple[int, tuple[str, str, int], Table]]:
    if node.op == "add":
        return _terms(node.args[0], inputs, sign) + _terms(node.args[1], inputs, sign)
    if node.op == "sub":
        return _terms(node.args[0], inputs, sign) + _terms(node.args[1], inputs, -sign)
    if node.op == "neg":
        return _terms(node.args[0], inputs, -sign)
    if node.op == "mul":
        (sa, a), (sb, b) = _strip_neg(node.args[0]), _strip_neg(node.args[1])
        for x, t in ((a, b), (b, a)):
            part = _x_part(x)
            if part is not None:
                try:
                    return [(sign * sa * sb, part, _table(t, inputs))]
                except _NotRope:
                    continue
    raise _NotRope(f"{node.op} in a rotation")


def _half(node: Node, i: int) -> Node:
    """Columns ``i`` of 2 of an expression over full-width tensors (``x * cos + rotate_half(x) * sin``)."""
    if node.op == "cat":
        if len(node.args) != 2:
            raise _NotRope("cat of more than two parts")
        return node.args[i]
    if node.op in ("input", "unsqueeze", "gather"):
        return Node("cols", (node,), value=("chunk", i, 2))
    if node.op in ("add", "sub", "mul", "neg"):
        return Node(node.op, tuple(_half(a, i) for a in node.args), node.kw)
    raise _NotRope(node.op)


def read_rotation(out: Node, inputs: list[str]) -> dict:
    """The rotated input, its layout, the cos/sin tables and the signs, or ``_NotRope``."""
    halves = out.args if out.op == "interleave" else (_half(out, 0), _half(out, 1))
    h0, h1 = (_terms(h, inputs) for h in halves)
    if len(h0) != 2 or len(h1) != 2:
        raise _NotRope("not two terms per half")
    names = {t[1][0] for t in h0 + h1}
    kinds = {t[1][1] for t in h0 + h1}
    if len(names) != 1 or len(kinds) != 1:
        raise _NotRope("terms over different tensors or views")
    layout = kinds.pop()
    if (layout == "every") != (out.op == "interleave"):
        raise _NotRope("even/odd columns must be written back interleaved")
    by0 = {t[1][2]: t for t in h0}
    by1 = {t[1][2]: t for t in h1}
    if set(by0) != {0, 1} or set(by1) != {0, 1} or by0[0][0] != 1 or by1[1][0] != 1:
        raise _NotRope("not a rotation of the two halves")
    c0, s0, c1, s1 = by0[0][2], by0[1][2], by1[1][2], by1[0][2]
    def key(t):
        return t.positions, t.unsqueeze

    if c0.source != c1.source or s0.source != s1.source or len({key(c0), key(c1), key(s0), key(s1)}) != 1:
        raise _NotRope("tables indexed differently")
    if (c0.part is None) != (c1.part is None) or (s0.part is None) != (s1.part is None):
        raise _NotRope("mixed table widths")
    if len(out.args) != 2 and out.op == "interleave":
        raise _NotRope("interleave of more than two parts")
    return {"x": names.pop(), "layout": layout, "cos": (c0, c1), "sin": (s0, s1),
            "sign0": by0[1][0], "sign1": by1[0][0]}


@register_template("rope")
class RopeTemplate(Template):
    categories = frozenset({"positional", "fusion"})
    budget = __doc__

    def match(self, task: Task, model: ReferenceModel) -> Match | None:
        if not 1 <= len(model.outputs) <= 2:
            return None
        try:
            rots = [read_rotation(o, model.forward_args) for o in model.outputs]
        except _NotRope:
            return None
        first = rots[0]
        if any((r["layout"], r["cos"], r["sin"], r["sign0"], r["sign1"]) !=
               (first["layout"], first["cos"], first["sin"], first["sign0"], first["sign1"]) for r in rots):
            return None
        xs = [r["x"] for r in rots]
        tables = {first["cos"][0].source, first["sin"][0].source, first["cos"][0].positions} - {None}
        if len(set(xs)) != len(xs) or tables & set(xs):
            return None
        if task.backward and not set(task.grad_inputs) <= set(xs):
            return None  # gradients of the tables: not this kernel's
        spec = {"xs": xs, "layout": first["layout"], "cos": first["cos"], "sin": first["sin"],
                "sign0": first["sign0"], "sign1": first["sign1"], "backward": task.backward}
        layout = "interleaved" if first["layout"] == "every" else "half-split"
        pos = ", position ids" if first["cos"][0].positions else ""
        what = "forward + backward" if task.backward else "forward"
        return Match(self, task, model, spec,
                     summary=f"RoPE of {' and '.join(xs)} in one launch, {layout}{pos}, {what}")

    def knobs(self, match: Match) -> list[KnobSpec]:
        return KNOBS

    def presets(self, match: Match) -> list[dict[str, int]]:
        return [{"ROWS": 32, "NUM_WARPS": 4}, {"ROWS": 8, "NUM_WARPS": 2}]

    def render(self, match: Match, params: dict[str, int]) -> str:
        doc = f"Template `rope` for {match.task.id}: {match.summary}.\n\n" + (__doc__ or "").split("\n\n", 1)[1]
        spec = match.spec
        body = _forward_body(spec)
        return assemble(doc, match, params, KERNELS, _host(spec), body)


KERNELS = '''
@triton.jit
def _rope_rows(x_ptr, y_ptr, cos_ptr, sin_ptr, pos_ptr, block, n_rows, half, d1, d2, d3, c0, c1, c2, c3,
               s0, s1, s2, s3, cos_row, sin_row, off_c0, off_c1, off_s0, off_s1, SIGN0: tl.constexpr,
               SIGN1: tl.constexpr, GATHER: tl.constexpr, FULL: tl.constexpr, EVERY: tl.constexpr,
               BACKWARD: tl.constexpr, ROWS: tl.constexpr, BLOCK_H: tl.constexpr):
    # ROWS head vectors: reads 2 * half elements per row and the row's table entries, writes 2 * half
    rows = block * ROWS + tl.arange(0, ROWS)
    rmask = rows < n_rows
    r = rows.to(tl.int64)
    i3 = r % d3
    t = r // d3
    i2 = t % d2
    t = t // d2
    i1 = t % d1
    i0 = t // d1
    if GATHER:  # the broadcast picks a position id, the id picks the table row
        pos = tl.load(pos_ptr + i0 * c0 + i1 * c1 + i2 * c2 + i3 * c3, mask=rmask, other=0).to(tl.int64)
        cbase = pos * cos_row
        sbase = pos * sin_row
    else:
        cbase = i0 * c0 + i1 * c1 + i2 * c2 + i3 * c3
        sbase = i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3
    cols = tl.arange(0, BLOCK_H)
    mask = rmask[:, None] & (cols < half)[None, :]
    cos0 = tl.load(cos_ptr + cbase[:, None] + off_c0 + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    sin0 = tl.load(sin_ptr + sbase[:, None] + off_s0 + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    if FULL:
        cos1 = tl.load(cos_ptr + cbase[:, None] + off_c1 + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        sin1 = tl.load(sin_ptr + sbase[:, None] + off_s1 + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    else:
        cos1 = cos0
        sin1 = sin0
    base = r[:, None] * (2 * half)
    if EVERY:
        at1 = base + 2 * cols[None, :]
        at2 = at1 + 1
    else:
        at1 = base + cols[None, :]
        at2 = at1 + half
    a = tl.load(x_ptr + at1, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(x_ptr + at2, mask=mask, other=0.0).to(tl.float32)
    if BACKWARD:  # the transpose of the forward's 2 x 2 rotation
        out1 = a * cos0 + SIGN1 * b * sin1
        out2 = b * cos1 + SIGN0 * a * sin0
    else:
        out1 = a * cos0 + SIGN0 * b * sin0
        out2 = b * cos1 + SIGN1 * a * sin1
    tl.store(y_ptr + at1, out1.to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(y_ptr + at2, out2.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rope_kernel(xa_ptr, ya_ptr, rows_a, da1, da2, da3, ca0, ca1, ca2, ca3, sa0, sa1, sa2, sa3,
                 xb_ptr, yb_ptr, rows_b, db1, db2, db3, cb0, cb1, cb2, cb3, sb0, sb1, sb2, sb3,
                 cos_ptr, sin_ptr, pos_ptr, half, cos_row, sin_row, off_c0, off_c1, off_s0, off_s1,
                 SIGN0: tl.constexpr, SIGN1: tl.constexpr, GATHER: tl.constexpr, FULL: tl.constexpr,
                 EVERY: tl.constexpr, BACKWARD: tl.constexpr, ROWS: tl.constexpr, BLOCK_H: tl.constexpr):
    # one launch for both tensors: the first programs take the first tensor's rows, the rest the second's
    pid = tl.program_id(0)
    blocks_a = tl.cdiv(rows_a, ROWS)
    if pid < blocks_a:
        _rope_rows(xa_ptr, ya_ptr, cos_ptr, sin_ptr, pos_ptr, pid, rows_a, half, da1, da2, da3, ca0, ca1, ca2, ca3,
                   sa0, sa1, sa2, sa3, cos_row, sin_row, off_c0, off_c1, off_s0, off_s1, SIGN0, SIGN1, GATHER, FULL,
                   EVERY, BACKWARD, ROWS, BLOCK_H)
    else:
        _rope_rows(xb_ptr, yb_ptr, cos_ptr, sin_ptr, pos_ptr, pid - blocks_a, rows_b, half, db1, db2, db3, cb0, cb1,
                   cb2, cb3, sb0, sb1, sb2, sb3, cos_row, sin_row, off_c0, off_c1, off_s0, off_s1, SIGN0, SIGN1,
                   GATHER, FULL, EVERY, BACKWARD, ROWS, BLOCK_H)
'''


def _view(name: str, table: Table) -> str:
    """The expression that broadcasts a table (or its position ids) the way the reference does."""
    if table.positions is not None:
        dims = [d if d >= 0 else d + 1 for d in table.unsqueeze]
        return table.positions + "".join(f".unsqueeze({d})" for d in dims)
    return name + "".join(f".unsqueeze({d})" for d in table.unsqueeze)


def _host(spec: dict) -> str:
    cos, sin = spec["cos"][0], spec["sin"][0]
    gather = cos.positions is not None
    full = spec["cos"][0].part != spec["cos"][1].part or spec["sin"][0].part != spec["sin"][1].part
    width_c = "2 * half" if cos.part is not None else "half"
    width_s = "2 * half" if sin.part is not None else "half"
    pos_arg = f", {cos.positions}" if gather else ""
    view_c = _view("cos", cos)
    view_s = _view("sin", sin)
    if gather:
        index = f'''    pv = {view_c}
    pv = pv.expand(*x.shape[:-1])
    st_c = _pad4(pv.stride())
    st_s = st_c'''
    else:
        index = f'''    cv = {view_c}
    cv = cv.expand(*x.shape[:-1], cv.shape[-1])
    sv = {view_s}
    sv = sv.expand(*x.shape[:-1], sv.shape[-1])
    st_c = _pad4(cv.stride()[:-1])
    st_s = _pad4(sv.stride()[:-1])'''
    offsets = "half * {c0}, half * {c1}, half * {s0}, half * {s1}".format(
        c0=spec["cos"][0].part or 0, c1=spec["cos"][1].part or 0, s0=spec["sin"][0].part or 0,
        s1=spec["sin"][1].part or 0)
    return f'''
def _pad4(values):
    values = tuple(values)
    return (0,) * (4 - len(values)) + values


def _args(x, y, cos, sin{pos_arg}, half):
    """Rows, the x dims a row index decomposes into, and the table strides of each x dim."""
    if x.dim() > 5:
        raise ValueError(f"RoPE of a {{x.dim()}}-dimensional tensor")
{index}
    dims = (1,) * (5 - x.dim()) + tuple(x.shape)
    rows = x.numel() // max(x.shape[-1], 1)
    return (x, y, rows, dims[1], dims[2], dims[3], *st_c, *st_s)


def _rotate(xs, cos, sin{pos_arg}, backward):
    """Both tensors' rotations (or their transposes, for gradients) in one launch."""
    cos = cos.contiguous()
    sin = sin.contiguous()
    x0 = xs[0]
    half = x0.shape[-1] // 2
    if x0.shape[-1] != 2 * half or cos.shape[-1] != {width_c} or sin.shape[-1] != {width_s}:
        raise ValueError(f"RoPE: head dim {{x0.shape[-1]}}, tables {{cos.shape[-1]}}, {{sin.shape[-1]}}")
    xs = [x.contiguous() for x in xs]
    ys = [torch.empty(x.shape, dtype=x.dtype if backward else torch.promote_types(x.dtype, cos.dtype),
                      device=x.device) for x in xs]
    parts = [_args(x, y, cos, sin{pos_arg}, half) for x, y in zip(xs, ys)]
    if len(parts) == 1:
        parts.append((xs[0], ys[0], 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0))
    blocks = sum(triton.cdiv(p[2], ROWS) for p in parts)
    if blocks and half:
        _rope_kernel[(blocks,)](*parts[0], *parts[1], cos, sin, {cos.positions if gather else "cos"}, half,
                                cos.stride(0) if cos.dim() else 0, sin.stride(0) if sin.dim() else 0,
                                {offsets}, SIGN0={spec["sign0"]}, SIGN1={spec["sign1"]}, GATHER={gather},
                                FULL={full}, EVERY={spec["layout"] == "every"}, BACKWARD=backward, ROWS=ROWS,
                                BLOCK_H=max(triton.next_power_of_2(half), 1), num_warps=NUM_WARPS)
    return ys
''' + _autograd(spec)


def _autograd(spec: dict) -> str:
    if not spec["backward"]:
        return ""
    xs = spec["xs"]
    cos = spec["cos"][0]
    pos = f", {cos.positions}" if cos.positions else ""
    args = ", ".join(xs)
    nones = ", None" * (2 + (1 if cos.positions else 0))
    return f'''

class _Rope(torch.autograd.Function):
    @staticmethod
    def forward(ctx, {args}, cos, sin{pos}):
        ctx.save_for_backward(cos, sin{pos})
        ctx.meta = [(x.shape, x.dtype) for x in ({args},)]
        return tuple(_rotate([{args}], cos, sin{pos}, False))

    @staticmethod
    def backward(ctx, *dys):
        cos, sin{pos} = ctx.saved_tensors
        dys = [torch.zeros(shape, dtype=dtype, device=cos.device) if dy is None else dy
               for dy, (shape, dtype) in zip(dys, ctx.meta)]
        return (*_rotate(dys, cos, sin{pos}, True){nones})
'''


def _forward_body(spec: dict) -> str:
    xs = spec["xs"]
    cos, sin = spec["cos"][0], spec["sin"][0]
    pos = f", {cos.positions}" if cos.positions else ""
    call = (f"_Rope.apply({', '.join(xs)}, {cos.source}, {sin.source}{pos})" if spec["backward"]
            else f"tuple(_rotate([{', '.join(xs)}], {cos.source}, {sin.source}{pos}, False))")
    if len(xs) == 1:
        return f"return {call}[0]"
    return f"return {call}"
