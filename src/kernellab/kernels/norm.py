"""RMSNorm and LayerNorm over the last dimension, forward and backward.

Matches ``x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight`` (also ``(1 + weight)``,
Gemma, or no weight) and ``F.layer_norm(x, shape, weight, bias, eps)`` (weight and bias optional).

Budget per call, ``M`` rows of ``N``:
  forward, rows up to MAX_SINGLE: reads x (M·N·elem) and the weight/bias (N·elem, cached), writes
            y (M·N·elem) and fp32 statistics (4·M, LayerNorm 8·M); RMSNorm 4·M·N FLOPs, LayerNorm 7·M·N.
  forward, longer rows: one program per row reads it two (RMS) or three (LayerNorm: mean, variance,
            output) times.
  backward: a row pass reads x and dy for the two row sums (2·M·N·elem), a second pass reads them
            again and writes dx (3·M·N·elem) plus G·N fp32 partials of dweight/dbias, summed per
            column by a third kernel (deterministic, no atomics). About 10·M·N FLOPs.
"""

from __future__ import annotations

from kernellab.kernels.reference_model import Node, ReferenceModel
from kernellab.kernels.rows import LOOP_KNOBS, ROWS_HOST, SINGLE_KNOBS, TILE_HOST
from kernellab.kernels.template import (
    COLUMN_SUM,
    COLUMN_SUM_HOST,
    KnobSpec,
    Match,
    Template,
    assemble,
    register_template,
)
from kernellab.tasks.model import Task

SPLIT_KNOBS = [
    KnobSpec("MIN_SEGMENT", 16384, "4096..131072", "shortest row segment when few long rows are split"),
    KnobSpec("TARGET_PROGRAMS", 512, "128..8192", "split long rows when fewer rows than this would run"),
]
BACKWARD_KNOBS = [
    KnobSpec("BLOCK_N", 1024, "128..8192", "columns per program of the backward's dx pass"),
    KnobSpec("ROW_GROUPS", 256, "16..1024", "row groups of the backward's dx pass (fp32 partials of dweight)"),
]


def _factors(node: Node) -> list[Node]:
    if node.op == "mul":
        return _factors(node.args[0]) + _factors(node.args[1])
    return [node]


def _is_square_of(node: Node, x: Node) -> bool:
    return (node.op == "pow" and node.args[0] == x and node.args[1].op == "const" and node.args[1].value == 2) \
        or (node.op == "square" and node.args[0] == x) or (node.op == "mul" and node.args == (x, x))


def _eps(node: Node) -> Node | None:
    return node if node.op == "scalar" or (node.op == "const" and isinstance(node.value, (int, float))) else None


def _residual(node: Node) -> tuple[str, str | None] | None:
    """(x, residual) of the normalised value: an input, or the residual stream ``x + residual`` of two."""
    if node.op == "input":
        return node.name, None
    if node.op == "add" and all(a.op == "input" for a in node.args) and node.args[0] != node.args[1]:
        return node.args[0].name, node.args[1].name
    return None


def _rms_parts(out: Node, model: ReferenceModel) -> dict | None:
    if out.op == "rms_norm":
        return _rms_call_parts(out, model)
    factors = _factors(out)
    inputs = [f for f in factors if _residual(f) is not None]
    roots = [f for f in factors if f.op == "rsqrt"]
    if len(inputs) != 1 or len(roots) != 1:
        return None
    x, root = inputs[0], roots[0]
    rest = [f for f in factors if f is not x and f is not root]
    inner = root.args[0]
    if inner.op != "add":
        return None
    mean = next((a for a in inner.args if a.op == "mean"), None)
    eps = next((_eps(a) for a in inner.args if a is not mean), None)
    if mean is None or eps is None or not _is_square_of(mean.args[0], x) or mean.const("dim") not in (-1, (-1,)) \
            or mean.const("keepdim") is not True:
        return None
    weight, plus_one = None, False
    if len(rest) > 1:
        return None
    if rest:
        w = rest[0]
        if w.op == "add" and any(a.op == "const" and a.value == 1 for a in w.args):
            w, plus_one = next(a for a in w.args if a.op != "const"), True
        param = model.param(w)
        if param is None or param.ndim != 1:
            return None
        weight = w.name
    return {"kind": "rms", "x": x, "weight": weight, "plus_one": plus_one, "bias": None, "eps": eps}


def _rms_call_parts(out: Node, model: ReferenceModel) -> dict | None:
    """``F.rms_norm(x, shape, weight, eps)`` with an explicit eps (its default depends on the dtype)."""
    eps = _eps(out.kwarg("eps")) if out.kwarg("eps") is not None else None
    if _residual(out.args[0]) is None or eps is None:
        return None
    weight = out.kwarg("weight")
    if weight is not None and not (weight.op == "const" and weight.value is None):
        param = model.param(weight)
        if param is None or param.ndim != 1:
            return None
        weight = weight.name
    else:
        weight = None
    return {"kind": "rms", "x": out.args[0], "weight": weight, "plus_one": False, "bias": None, "eps": eps}


def _layer_parts(out: Node, model: ReferenceModel) -> dict | None:
    if out.op != "layer_norm" or _residual(out.args[0]) is None:
        return None
    names = {}
    for key in ("weight", "bias"):
        node = out.kwarg(key)
        if node is None or (node.op == "const" and node.value is None):
            names[key] = None
            continue
        param = model.param(node)
        if param is None or param.ndim != 1:
            return None
        names[key] = node.name
    eps = out.kwarg("eps")
    eps = Node("const", value=1e-5) if eps is None else _eps(eps)
    if eps is None:
        return None
    return {"kind": "layer", "x": out.args[0], "weight": names["weight"], "plus_one": False,
            "bias": names["bias"], "eps": eps}


@register_template("norm")
class NormTemplate(Template):
    categories = frozenset({"normalization", "fusion"})
    budget = __doc__

    def match(self, task: Task, model: ReferenceModel) -> Match | None:
        if len(model.outputs) not in (1, 2):
            return None
        for position, out in enumerate(model.outputs):  # noqa: B007 - read after the loop: the output that matched
            parts = _layer_parts(out, model) if out.op == "layer_norm" else _rms_parts(out, model)
            if parts is not None:
                break
        else:
            return None
        normed = parts["x"]
        parts["x"], parts["residual"] = _residual(normed)
        # a second output is the residual stream itself: (norm(x + r), x + r) or (x + r, norm(x + r)),
        # or a second norm of the same form of another input (q and k of QK-norm)
        parts["sum_at"] = parts["also"] = None
        if len(model.outputs) == 2:
            other = model.outputs[1 - position]
            if parts["residual"] is not None and other == normed:
                parts["sum_at"] = 1 - position
            else:
                also = _layer_parts(other, model) if other.op == "layer_norm" else _rms_parts(other, model)
                same = ("kind", "plus_one")
                if parts["residual"] is not None or also is None or any(also[k] != parts[k] for k in same) or \
                        (also["weight"] is None) != (parts["weight"] is None) or \
                        (also["bias"] is None) != (parts["bias"] is None) or _residual(also["x"]) is None or \
                        _residual(also["x"])[1] is not None or position != 0:
                    return None
                parts["also"] = {"x": _residual(also["x"])[0], "weight": also["weight"], "bias": also["bias"],
                                 "eps": also["eps"]}
        parts["backward"] = task.backward
        inputs = {parts["x"], parts["residual"], (parts["also"] or {}).get("x")} - {None}
        if task.backward and not set(task.grad_inputs) <= inputs:
            return None
        name = "RMSNorm" if parts["kind"] == "rms" else "LayerNorm"
        added = "residual add + " if parts["residual"] else ""
        both = " (both outputs)" if parts["sum_at"] is not None else " of two inputs" if parts["also"] else ""
        return Match(self, task, model, parts,
                     summary=f"{added}{name} over the last dimension{both}, "
                             f"{'forward + backward' if task.backward else 'forward'}")

    def knobs(self, match: Match) -> list[KnobSpec]:
        return SINGLE_KNOBS + LOOP_KNOBS + SPLIT_KNOBS + (BACKWARD_KNOBS if match.spec["backward"] else [])

    def presets(self, match: Match) -> list[dict[str, int]]:
        return [{"ELEMS_PER_WARP": 256}, {"ELEMS_PER_WARP": 1024, "TILE": 8192}]

    def render(self, match: Match, params: dict[str, int]) -> str:
        r = _Render(match.spec)
        kernels = r.tile_forward() + r.loop_forward() + r.split_forward()
        host = ROWS_HOST + TILE_HOST + r.forward_host()
        if r.backward:
            kernels += r.row_sums() + r.dx_kernel() + (COLUMN_SUM if r.w or r.b else "")
            host += r.backward_host() + (COLUMN_SUM_HOST if r.w or r.b else "")
        doc = f"Template `norm` for {match.task.id}: {match.summary}.\n\n" + (__doc__ or "").split("\n\n", 2)[2]
        return assemble(doc, match, params, kernels, host, r.forward_body())


class _Render:
    def __init__(self, spec: dict):
        self.layer = spec["kind"] == "layer"
        self.x: str = spec["x"]
        self.w: str | None = spec["weight"]
        self.b: str | None = spec["bias"]
        self.plus_one: bool = spec["plus_one"]
        self.eps: Node = spec["eps"]
        self.backward: bool = spec["backward"]
        self.r: str | None = spec.get("residual")
        self.sum_at: int | None = spec.get("sum_at")
        self.also: dict | None = spec.get("also")

    def load_x(self, indent: str, offs: str, mask: str, first: bool = True) -> str:
        """Statements giving fp32 ``x``, the normalised value: with a residual, x + r rounded to the
        stored sum's dtype (as the reference's sum is), stored once by the first pass and re-read after."""
        if not self.r:
            return f"{indent}x = tl.load(x_ptr + {offs}, mask={mask}, other=0.0).to(tl.float32)\n"
        if not first:
            return f"{indent}x = tl.load(s_ptr + {offs}, mask={mask}, other=0.0).to(tl.float32)\n"
        return (f"{indent}x = (tl.load(x_ptr + {offs}, mask={mask}, other=0.0).to(tl.float32) + "
                f"tl.load(r_ptr + {offs}, mask={mask}, other=0.0).to(tl.float32)).to(s_ptr.dtype.element_ty)\n"
                f"{indent}tl.store(s_ptr + {offs}, x, mask={mask})\n"
                f"{indent}x = x.to(tl.float32)\n")

    def rs(self) -> str:
        return "r_ptr, s_ptr, " if self.r else ""

    def weight(self, indent: str, cols: str, mask: str, bias: bool = True) -> str:
        lines = ""
        if self.w:
            one = " + 1.0" if self.plus_one else ""
            lines += f"{indent}w = tl.load(w_ptr + {cols}, mask={mask}, other=0.0).to(tl.float32){one}\n"
        if self.b and bias:
            lines += f"{indent}b = tl.load(b_ptr + {cols}, mask={mask}, other=0.0).to(tl.float32)\n"
        return lines

    def affine(self, xhat: str, w: str, b: str) -> str:
        return xhat + (f" * {w}" if self.w else "") + (f" + {b}" if self.b else "")

    # ------------------------------------------------------------------------------------ forward

    def tile_forward(self) -> str:
        if self.layer:
            # Statistics of x - (the row's first element): a constant row gives exactly zero, as it must.
            pivot = "tl.sum(tl.where(cols[None, :] == 0, x, 0.0), axis=1)" if self.r else \
                "tl.load(x_ptr + rows.to(tl.int64) * n_cols, mask=rmask, other=0.0).to(tl.float32)"
            stats = f'''    pivot = {pivot}
    d = tl.where(mask, x - pivot[:, None], 0.0)
    mean_d = tl.sum(d, axis=1) / n_cols
    xc = tl.where(mask, d - mean_d[:, None], 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(xc * xc, axis=1) / n_cols + eps)
    tl.store(mean_ptr + rows, pivot + mean_d, mask=rmask)
'''
        else:
            stats = '''    xc = x
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / n_cols + eps)
'''
        return f'''
@triton.jit
def _tile_forward_kernel(x_ptr, {self.rs()}w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, n_rows, n_cols, eps,
                         BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    # whole rows in registers: reads x once, writes y and fp32 row statistics once
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_C)
    rmask = rows < n_rows
    cmask = cols < n_cols
    mask = rmask[:, None] & cmask[None, :]
    offs = rows.to(tl.int64)[:, None] * n_cols + cols[None, :]
{self.load_x("    ", "offs", "mask")}{stats}    tl.store(rstd_ptr + rows, rstd, mask=rmask)
{self.weight("    ", "cols", "cmask")}    y = {self.affine("xc * rstd[:, None]", "w[None, :]", "b[None, :]")}
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
'''

    def loop_forward(self) -> str:
        first = self.load_x("        ", "base + cols", "mask")
        load = self.load_x("        ", "base + cols", "mask", first=False)
        loop = '''    for c0 in range(0, n_cols, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        mask = cols < n_cols
'''
        if self.layer:
            pivot = "tl.load(x_ptr + base).to(tl.float32)"
            if self.r:  # the sum's first element, rounded as the stored sum is
                pivot = f"({pivot} + tl.load(r_ptr + base).to(tl.float32)).to(s_ptr.dtype.element_ty).to(tl.float32)"
            stats = f'''    pivot = {pivot}
    acc = tl.zeros([BLOCK_C], dtype=tl.float32)
{loop}{first}        acc += tl.where(mask, x - pivot, 0.0)
    mean_d = tl.sum(acc, axis=0) / n_cols
    acc = tl.zeros([BLOCK_C], dtype=tl.float32)
{loop}{load}        acc += tl.where(mask, (x - pivot - mean_d) * (x - pivot - mean_d), 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    tl.store(mean_ptr + row, pivot + mean_d)
'''
        else:
            stats = f'''    pivot = 0.0
    mean_d = 0.0
    acc = tl.zeros([BLOCK_C], dtype=tl.float32)
{loop}{first}        acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
'''
        return f'''
@triton.jit
def _loop_forward_kernel(x_ptr, {self.rs()}w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, n_cols, eps, BLOCK_C: tl.constexpr):
    # one program per row, walked in BLOCK_C-wide chunks: statistics pass(es), then the output pass
    row = tl.program_id(0)
    base = tl.cast(row, tl.int64) * n_cols
{stats}    tl.store(rstd_ptr + row, rstd)
{loop}{load}{self.weight("        ", "cols", "mask")}        y = {self.affine("(x - pivot - mean_d) * rstd", "w", "b")}
        tl.store(y_ptr + base + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
'''

    def split_forward(self) -> str:
        """Few rows longer than MAX_SINGLE: each row split over programs. Pass 1 writes per-segment sums
        (of x², or of d = x - the row's first element and d² for LayerNorm); pass 2 combines the row's
        segments and writes y over its segment. Two reads of x in all, every SM busy."""
        first = self.load_x("        ", "base + cols", "mask")
        load = self.load_x("        ", "base + cols", "mask", first=False)
        pivot = "tl.load(x_ptr + base).to(tl.float32)"
        if self.r:
            pivot = f"({pivot} + tl.load(r_ptr + base).to(tl.float32)).to(s_ptr.dtype.element_ty).to(tl.float32)"
        if not self.layer:
            pivot = "0.0"
        loop = '''    for c0 in range(start, end, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        mask = cols < end
'''
        if self.layer:
            sums = f'''{loop}{first}        d = tl.where(mask, x - pivot, 0.0)
        acc1 += d
        acc2 += d * d
'''
            stats = '''    mean_d = tl.sum(p1, axis=0) / n_cols
    var = tl.maximum(tl.sum(p2, axis=0) / n_cols - mean_d * mean_d, 0.0)
    rstd = 1.0 / tl.sqrt(var + eps)
    if split == 0:
        tl.store(mean_ptr + row, pivot + mean_d)
'''
        else:
            sums = f'''{loop}{first}        acc2 += x * x
'''
            stats = '''    mean_d = 0.0
    rstd = 1.0 / tl.sqrt(tl.sum(p2, axis=0) / n_cols + eps)
'''
        return f'''
@triton.jit
def _split_stats_kernel(x_ptr, {self.rs()}part_ptr, n_cols, seg_len, n_splits, BLOCK_C: tl.constexpr):
    # pass 1 over one segment of one row: its partial sums
    row = tl.program_id(0)
    split = tl.program_id(1)
    base = tl.cast(row, tl.int64) * n_cols
    start = split * seg_len
    end = tl.minimum(start + seg_len, n_cols)
    pivot = {pivot}
    acc1 = tl.zeros([BLOCK_C], dtype=tl.float32)
    acc2 = tl.zeros([BLOCK_C], dtype=tl.float32)
{sums}    tl.store(part_ptr + (row * n_splits + split) * 2, tl.sum(acc1, axis=0))
    tl.store(part_ptr + (row * n_splits + split) * 2 + 1, tl.sum(acc2, axis=0))


@triton.jit
def _split_write_kernel(x_ptr, {self.rs()}w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, part_ptr, n_cols, seg_len,
                        n_splits, eps, BLOCK_C: tl.constexpr, BLOCK_S: tl.constexpr):
    # pass 2: the row's statistics from every segment's sums, then y over this segment
    row = tl.program_id(0)
    split = tl.program_id(1)
    base = tl.cast(row, tl.int64) * n_cols
    idx = tl.arange(0, BLOCK_S)
    p1 = tl.load(part_ptr + (row * n_splits + idx) * 2, mask=idx < n_splits, other=0.0)
    p2 = tl.load(part_ptr + (row * n_splits + idx) * 2 + 1, mask=idx < n_splits, other=0.0)
    pivot = {pivot}
{stats}    if split == 0:
        tl.store(rstd_ptr + row, rstd)
    start = split * seg_len
    end = tl.minimum(start + seg_len, n_cols)
{loop}{load}{self.weight("        ", "cols", "mask")}        y = {self.affine("(x - pivot - mean_d) * rstd", "w", "b")}
        tl.store(y_ptr + base + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
'''

    def forward_host(self) -> str:
        w = self.w and "weight" or "x2"
        b = self.b and "bias" or "x2"
        if self.r:  # the sum s = x + r is written by the forward kernels and normalised
            head = '''def _norm_forward(x, r, weight, bias, eps):
    x2, n_rows, n_cols = _rows(x)
    r2, _, _ = _rows(r)
    s = torch.empty(x2.shape, dtype=torch.promote_types(x.dtype, r.dtype), device=x.device)
    dtype = s.dtype if weight is None else torch.promote_types(s.dtype, weight.dtype)'''
            ret, xs = "y.view(x.shape), s.view(x.shape), mean, rstd", "x2, r2, s"
        else:
            head = '''def _norm_forward(x, weight, bias, eps):
    x2, n_rows, n_cols = _rows(x)
    dtype = x.dtype if weight is None else torch.promote_types(x.dtype, weight.dtype)'''
            ret, xs = "y.view(x.shape), mean, rstd", "x2"
        return f'''
{head}
    y = torch.empty(x2.shape, dtype=dtype, device=x.device)
    mean = torch.empty(n_rows, dtype=torch.float32, device=x.device)
    rstd = torch.empty(n_rows, dtype=torch.float32, device=x.device)
    if n_rows and n_cols:
        if triton.next_power_of_2(n_cols) <= MAX_SINGLE:
            block_r, block_c, warps = _tile(n_rows, n_cols)
            _tile_forward_kernel[(triton.cdiv(n_rows, block_r),)]({xs}, {w}, {b}, y, mean, rstd, n_rows, n_cols, eps, BLOCK_R=block_r, BLOCK_C=block_c, num_warps=warps)
        elif n_rows >= TARGET_PROGRAMS or n_cols <= MIN_SEGMENT:
            _loop_forward_kernel[(n_rows,)]({xs}, {w}, {b}, y, mean, rstd, n_cols, eps,
                                            BLOCK_C=min(CHUNK, triton.next_power_of_2(n_cols)), num_warps=LOOP_WARPS)
        else:  # few long rows: split each over programs
            block_c = min(CHUNK, triton.next_power_of_2(n_cols))
            splits = max(1, min(triton.cdiv(n_cols, MIN_SEGMENT), triton.cdiv(TARGET_PROGRAMS, n_rows)))
            seg_len = triton.cdiv(triton.cdiv(n_cols, splits), block_c) * block_c
            splits = triton.cdiv(n_cols, seg_len)
            part = torch.empty((n_rows, splits, 2), dtype=torch.float32, device=x.device)
            _split_stats_kernel[(n_rows, splits)]({xs}, part, n_cols, seg_len, splits, BLOCK_C=block_c,
                                                  num_warps=LOOP_WARPS)
            _split_write_kernel[(n_rows, splits)]({xs}, {w}, {b}, y, mean, rstd, part, n_cols, seg_len, splits, eps,
                                                  BLOCK_C=block_c, BLOCK_S=max(2, triton.next_power_of_2(splits)),
                                                  num_warps=LOOP_WARPS)
    return {ret}
'''

    def eps_arg(self, eps: Node | None = None) -> str:
        eps = eps or self.eps
        return f"float(self.{eps.name})" if eps.op == "scalar" else repr(float(eps.value))

    def forward_body(self) -> str:
        w = f"self.{self.w}" if self.w else "None"
        b = f"self.{self.b}" if self.b else "None"
        if self.also:  # two inputs normalised alike, each with its own parameters: the same kernels twice
            a = self.also
            calls = []
            for x, wn, bn, eps in ((self.x, self.w, self.b, self.eps), (a["x"], a["weight"], a["bias"], a["eps"])):
                args = f"{x}, {f'self.{wn}' if wn else 'None'}, {f'self.{bn}' if bn else 'None'}, {self.eps_arg(eps)}"
                calls.append(f"_Norm.apply({args})" if self.backward else f"_norm_forward({args})[0]")
            return f"return {calls[0]}, {calls[1]}"
        if self.r:
            outputs = {None: "y", 0: "s, y", 1: "y, s"}[self.sum_at]
            if self.backward:
                return f"y, s = _Norm.apply({self.x}, {self.r}, {w}, {b}, {self.eps_arg()})\nreturn {outputs}"
            return f"y, s, _, _ = _norm_forward({self.x}, {self.r}, {w}, {b}, {self.eps_arg()})\nreturn {outputs}"
        if self.backward:
            return f"return _Norm.apply({self.x}, {w}, {b}, {self.eps_arg()})"
        return f"return _norm_forward({self.x}, {w}, {b}, {self.eps_arg()})[0]"

    # ------------------------------------------------------------------------------------ backward

    def row_sums(self) -> str:
        mean = "    mean = tl.load(mean_ptr + rows, mask=rmask, other=0.0)\n" if self.layer else ""
        xhat = "(x - mean[:, None]) * rstd[:, None]" if self.layer else "x * rstd[:, None]"
        wdy = "w[None, :] * dy" if self.w else "dy"
        acc2 = "        acc2 += wdy\n" if self.layer else ""
        store2 = "    tl.store(c2_ptr + rows, tl.sum(acc2, axis=1) / n_cols, mask=rmask)\n" if self.layer else ""
        return f'''
@triton.jit
def _row_sums_kernel(dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, c1_ptr, c2_ptr, n_rows, n_cols, BLOCK_R: tl.constexpr,
                     BLOCK_C: tl.constexpr):
    # per row: c1 = mean(xhat * w * dy) (and c2 = mean(w * dy)); reads x and dy once
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = rows < n_rows
    base = rows.to(tl.int64)[:, None] * n_cols
    rstd = tl.load(rstd_ptr + rows, mask=rmask, other=0.0)
{mean}    acc1 = tl.zeros([BLOCK_R, BLOCK_C], dtype=tl.float32)
    acc2 = tl.zeros([BLOCK_R, BLOCK_C], dtype=tl.float32)
    for c0 in range(0, n_cols, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        cmask = cols < n_cols
        mask = rmask[:, None] & cmask[None, :]
        x = tl.load(x_ptr + base + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + base + cols[None, :], mask=mask, other=0.0).to(tl.float32)
{self.weight("        ", "cols", "cmask", bias=False)}        wdy = {wdy}
        acc1 += {xhat} * wdy
{acc2}    tl.store(c1_ptr + rows, tl.sum(acc1, axis=1) / n_cols, mask=rmask)
{store2}'''

    def dx_kernel(self) -> str:
        mean = "        mean = tl.load(mean_ptr + row)\n" if self.layer else ""
        xhat = "(x - mean) * rstd" if self.layer else "x * rstd"
        wdy = "w * dy" if self.w else "dy"
        c2 = " - tl.load(c2_ptr + row)" if self.layer else ""
        # with a residual, the sum's own incoming gradient joins the norm's
        ds = " + tl.load(ds_ptr + offs, mask=cmask, other=0.0).to(tl.float32)" if self.r else ""
        accs, adds, stores = "", "", ""
        if self.w:
            accs += "    acc_w = tl.zeros([BLOCK_N], dtype=tl.float32)\n"
            adds += "        acc_w += dy * xhat\n"
            stores += "    tl.store(dw_ptr + g * n_cols + cols, acc_w, mask=cmask)\n"
        if self.b:
            accs += "    acc_b = tl.zeros([BLOCK_N], dtype=tl.float32)\n"
            adds += "        acc_b += dy\n"
            stores += "    tl.store(db_ptr + g * n_cols + cols, acc_b, mask=cmask)\n"
        return f'''
@triton.jit
def _dx_kernel(dy_ptr, {"ds_ptr, " if self.r else ""}x_ptr, w_ptr, mean_ptr, rstd_ptr, c1_ptr, c2_ptr, dx_ptr, dw_ptr, db_ptr,
               n_rows, n_cols, BLOCK_N: tl.constexpr):
    # program (g, c): rows g, g + G, ... of column block c; reads x and dy, writes dx and fp32 partials
    g = tl.program_id(0)
    groups = tl.num_programs(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = cols < n_cols
{self.weight("    ", "cols", "cmask", bias=False)}{accs}    for row in range(g, n_rows, groups):
        offs = tl.cast(row, tl.int64) * n_cols + cols
        x = tl.load(x_ptr + offs, mask=cmask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + offs, mask=cmask, other=0.0).to(tl.float32)
        rstd = tl.load(rstd_ptr + row)
{mean}        xhat = {xhat}
        dx = rstd * ({wdy} - xhat * tl.load(c1_ptr + row){c2}){ds}
        tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=cmask)
{adds}{stores}'''

    def backward_host(self) -> str:
        w = "weight" if self.w else "x2"
        parts = ""
        sums = ""
        dw_part, db_part = "x2", "x2"
        if self.w:
            parts += "    part_w = torch.empty((groups, n_cols), dtype=torch.float32, device=x2.device)\n"
            sums += "    dweight = _column_sum(part_w, torch.empty_like(weight))\n"
            dw_part = "part_w"
        if self.b:
            parts += "    part_b = torch.empty((groups, n_cols), dtype=torch.float32, device=x2.device)\n"
            sums += "    dbias = _column_sum(part_b, torch.empty_like(bias))\n"
            db_part = "part_b"
        grads = ["dx.view(ctx.shape)", "dx.view(ctx.shape)"] if self.r else ["dx.view(ctx.shape)"]
        returns = ", ".join([*grads, "dweight" if self.w else "None", "dbias" if self.b else "None", "None"])
        ds, ds_arg = ("ds, ", "ds, ") if self.r else ("", "")
        ds_view = "    ds = ds.contiguous().view(n_rows, n_cols)\n" if self.r else ""
        return f'''
def _norm_backward(dy, {ds}x2, weight, bias, mean, rstd):
    n_rows, n_cols = x2.shape
    dy = dy.contiguous().view(n_rows, n_cols)
{ds_view}    dx = torch.empty_like(x2)
    c1 = torch.empty(n_rows, dtype=torch.float32, device=x2.device)
    c2 = torch.empty(n_rows, dtype=torch.float32, device=x2.device)
    groups = min(n_rows, ROW_GROUPS)
{parts}    if n_rows and n_cols:
        block_c = max(16, min(CHUNK, triton.next_power_of_2(n_cols)))
        block_r = max(1, min(TILE // block_c, triton.next_power_of_2(n_rows)))
        _row_sums_kernel[(triton.cdiv(n_rows, block_r),)](dy, x2, {w}, mean, rstd, c1, c2, n_rows, n_cols,
                                                          BLOCK_R=block_r, BLOCK_C=block_c, num_warps=LOOP_WARPS)
        _dx_kernel[(groups, triton.cdiv(n_cols, BLOCK_N))](dy, {ds_arg}x2, {w}, mean, rstd, c1, c2, dx, {dw_part}, {db_part},
                                                           n_rows, n_cols, BLOCK_N=BLOCK_N, num_warps=LOOP_WARPS)
    dweight = dbias = None
{sums}    return dx, dweight, dbias


{self.autograd(returns)}'''

    def autograd(self, returns: str) -> str:
        if self.r:
            return f'''class _Norm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, r, weight, bias, eps):
        y, s, mean, rstd = _norm_forward(x, r, weight, bias, eps)
        ctx.save_for_backward(s.view(-1, s.shape[-1]) if s.dim() else s.view(1, 1), weight, bias, mean, rstd)
        ctx.shape = x.shape
        return y, s

    @staticmethod
    def backward(ctx, dy, ds):
        s2, weight, bias, mean, rstd = ctx.saved_tensors
        dx, dweight, dbias = _norm_backward(dy, ds, s2, weight, bias, mean, rstd)
        return {returns}
'''
        return f'''class _Norm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        y, mean, rstd = _norm_forward(x, weight, bias, eps)
        x2, _, _ = _rows(x)
        ctx.save_for_backward(x2, weight, bias, mean, rstd)
        ctx.shape = x.shape
        return y

    @staticmethod
    def backward(ctx, dy):
        x2, weight, bias, mean, rstd = ctx.saved_tensors
        dx, dweight, dbias = _norm_backward(dy, x2, weight, bias, mean, rstd)
        return {returns}
'''
