"""Row-wise softmax, log-softmax and logsumexp over the last dimension, after an optional elementwise
pre-op on the input (``x / temperature``, ``cap * tanh(x / cap)``), forward and backward.

Budget per call, ``M`` rows of ``N``, ``f`` FLOPs per element of the pre-op:
  forward, rows up to MAX_SINGLE: reads M·N·elem once, writes M·N·elem (and M lse); (f + 4)·M·N FLOPs.
  forward, longer rows (online softmax): pass 1 reads the row and keeps a running max and sum per
            lane, pass 2 reads it again and writes: 2·M·N·elem read, M·N·elem written. Rows are split
            into segments when there are few rows, so the GPU stays busy; segment statistics
            (8·M·S bytes) are combined by each writer.
  backward: reads y and dy (log-softmax: y and dy; logsumexp alone: x, lse and dlse), writes dx:
            3·M·N·elem (the pre-op adds a read of x); about 4·M·N FLOPs plus the pre-op's derivative.
"""

from __future__ import annotations

from kernellab.kernels.reference_model import Node, ReferenceModel
from kernellab.kernels.rows import (
    LOOP_KNOBS,
    ROWS_HOST,
    SINGLE_KNOBS,
    TILE_HOST,
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

SPLIT_KNOBS = [
    KnobSpec("MIN_SEGMENT", 16384, "4096..131072", "shortest row segment of the online forward"),
    KnobSpec("TARGET_PROGRAMS", 1024, "128..8192", "programs the online forward aims for (rows x segments)"),
]


@register_template("softmax")
class SoftmaxTemplate(Template):
    categories = frozenset({"softmax", "reductions", "fusion"})
    budget = __doc__

    def match(self, task: Task, model: ReferenceModel) -> Match | None:
        outs = model.outputs
        ops = tuple(o.op for o in outs)
        if ops not in (("softmax",), ("log_softmax",), ("logsumexp",), ("softmax", "logsumexp")):
            return None
        pre = outs[0].args[0]
        if any(o.args[0] != pre for o in outs):
            return None
        x = single_input_chain(pre, model)
        if x is None or not all(last_dim(o, model, x) for o in outs):
            return None
        if outs[-1].op == "logsumexp" and outs[-1].const("keepdim", False) not in (False, None):
            return None
        mode = {"softmax": "softmax", "log_softmax": "log_softmax", "logsumexp": "lse"}[ops[0]]
        if len(outs) == 2:
            mode = "softmax+lse"
        backward = task.backward and x in task.grad_inputs
        if task.backward and not backward:
            return None
        if backward and pre.op != "input":
            try:
                TritonExpr(chain_leaf).grad(pre, Node("input", name=x))
            except NotElementwise:
                return None
        return Match(self, task, model, {"mode": mode, "pre": pre, "x": x, "scalars": scalars_of(pre),
                                         "backward": backward, "flops": flops_per_element(pre)},
                     summary=f"row-wise {mode} over the last dimension"
                             f"{' after an elementwise pre-op' if pre.op != 'input' else ''}"
                             f", {'forward + backward' if backward else 'forward'}")

    def knobs(self, match: Match) -> list[KnobSpec]:
        return SINGLE_KNOBS + LOOP_KNOBS + SPLIT_KNOBS

    def presets(self, match: Match) -> list[dict[str, int]]:
        return [{"ELEMS_PER_WARP": 256}, {"CHUNK": 8192, "LOOP_WARPS": 16}, {"TILE": 8192}]

    def render(self, match: Match, params: dict[str, int]) -> str:
        r = _Render(match)
        kernels = r.tile_forward() + r.stats_kernel() + r.write_kernel()
        host = ROWS_HOST + TILE_HOST + r.forward_host()
        if r.backward:
            kernels += r.tile_backward() + r.loop_backward()
            host += r.backward_host()
        doc = f"Template `softmax` for {match.task.id}: {match.summary}.\n\n" + (__doc__ or "").split("\n\n", 1)[1]
        return assemble(doc, match, params, helper_source(r.helpers) + kernels, host, r.forward_body())


class _Render:
    def __init__(self, match: Match):
        spec = match.spec
        self.mode: str = spec["mode"]
        self.pre: Node = spec["pre"]
        self.x: str = spec["x"]
        self.scalars: list[str] = spec["scalars"]
        self.backward: bool = spec["backward"]
        self.helpers: set[str] = set()
        self.writes_y = self.mode != "lse"
        self.log = self.mode == "log_softmax"

    # ------------------------------------------------------------------------------------ pieces

    def sargs(self) -> str:
        return "".join(f", s_{s}" for s in self.scalars)

    def hargs(self) -> str:
        return "".join(f", {s}" for s in self.scalars)

    def pre_code(self, indent: str) -> tuple[str, str]:
        if self.pre.op == "input":
            return "", "x"
        expr = TritonExpr(chain_leaf, indent=indent, prefix="z")
        z = expr.value(self.pre)
        self.helpers |= expr.helpers
        return expr.code() + "\n", z

    def pre_grad(self, indent: str) -> tuple[str, str]:
        expr = TritonExpr(chain_leaf, indent=indent, prefix="g")
        g = expr.grad(self.pre, Node("input", name=self.x)) or "0.0"
        self.helpers |= expr.helpers
        return expr.code() + "\n", g

    # ------------------------------------------------------------------------------------ forward

    def tile_forward(self) -> str:
        pre, z = self.pre_code("    ")
        stores = []
        if self.writes_y:
            y = "z - m[:, None] - tl.log(s)[:, None]" if self.log else "e / s[:, None]"
            stores.append(f"    tl.store(y_ptr + offs, ({y}).to(y_ptr.dtype.element_ty), mask=mask)")
        stores.append("    tl.store(lse_ptr + rows, m + tl.log(s), mask=rmask)")
        store_lines = "\n".join(stores)
        return f'''
@triton.jit
def _tile_forward_kernel(x_ptr, y_ptr, lse_ptr, n_rows, n_cols{self.sargs()}, BLOCK_R: tl.constexpr,
                         BLOCK_C: tl.constexpr):
    # whole rows in registers: reads x once, writes y and an fp32 lse per row once
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_C)
    rmask = rows < n_rows
    mask = rmask[:, None] & (cols[None, :] < n_cols)
    offs = rows.to(tl.int64)[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
{pre}    z = tl.where(mask, {z}, float("-inf"))
    m = tl.where(rmask, tl.max(z, axis=1), 0.0)
    e = tl.exp(z - m[:, None])
    s = tl.sum(e, axis=1)
{store_lines}
'''

    def stats_kernel(self) -> str:
        pre, z = self.pre_code("        ")
        return f'''
@triton.jit
def _stats_kernel(x_ptr, part_m_ptr, part_s_ptr, n_cols, seg_len, n_splits{self.sargs()}, BLOCK_C: tl.constexpr):
    # pass 1 over one segment of one row: a running max and sum of exponentials per lane
    row = tl.program_id(0)
    split = tl.program_id(1)
    base = x_ptr + tl.cast(row, tl.int64) * n_cols
    start = split * seg_len
    end = tl.minimum(start + seg_len, n_cols)
    m = tl.full([BLOCK_C], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK_C], dtype=tl.float32)
    for c0 in range(start, end, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        mask = cols < end
        x = tl.load(base + cols, mask=mask, other=0.0).to(tl.float32)
{pre}        z = tl.where(mask, {z}, float("-inf"))
        m_new = tl.maximum(m, z)
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        s = s * tl.exp(m - m_safe) + tl.exp(z - m_safe)
        m = m_new
    m_row = tl.max(m, axis=0)
    m_row_safe = tl.where(m_row == float("-inf"), 0.0, m_row)
    tl.store(part_m_ptr + row * n_splits + split, m_row)
    tl.store(part_s_ptr + row * n_splits + split, tl.sum(s * tl.exp(m - m_row_safe), axis=0))
'''

    def write_kernel(self) -> str:
        pre, z = self.pre_code("        ")
        loop = ""
        if self.writes_y:
            y = "z - m - log_total" if self.log else "tl.exp(z - m) * inv"
            loop = f'''    base = tl.cast(row, tl.int64) * n_cols
    start = split * seg_len
    end = tl.minimum(start + seg_len, n_cols)
    inv = 1.0 / total
    for c0 in range(start, end, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        mask = cols < end
        x = tl.load(x_ptr + base + cols, mask=mask, other=0.0).to(tl.float32)
{pre}        z = {z}
        tl.store(y_ptr + base + cols, ({y}).to(y_ptr.dtype.element_ty), mask=mask)
'''
        return f'''
@triton.jit
def _write_kernel(x_ptr, y_ptr, lse_ptr, part_m_ptr, part_s_ptr, n_cols, seg_len, n_splits{self.sargs()},
                  BLOCK_C: tl.constexpr, BLOCK_S: tl.constexpr):
    # combines the row's segment statistics; pass 2 over this segment writes y (segment 0 writes lse)
    row = tl.program_id(0)
    split = tl.program_id(1)
    idx = tl.arange(0, BLOCK_S)
    pm = tl.load(part_m_ptr + row * n_splits + idx, mask=idx < n_splits, other=float("-inf"))
    ps = tl.load(part_s_ptr + row * n_splits + idx, mask=idx < n_splits, other=0.0)
    m = tl.max(pm, axis=0)
    m = tl.where(m == float("-inf"), 0.0, m)
    total = tl.sum(ps * tl.exp(pm - m), axis=0)
    log_total = tl.log(total)
    if split == 0:
        tl.store(lse_ptr + row, m + log_total)
{loop}'''

    def forward_host(self) -> str:
        y_alloc = "torch.empty_like(x2)" if self.writes_y else "x2  # not written: logsumexp alone"
        return f'''
def _softmax_forward(x{self.hargs()}):
    """(y as x's shape, fp32 lse per row) of x's rows."""
    x2, n_rows, n_cols = _rows(x)
    y = {y_alloc}
    lse = torch.empty(n_rows, dtype=torch.float32, device=x.device)
    if n_rows and n_cols:
        if triton.next_power_of_2(n_cols) <= MAX_SINGLE:
            block_r, block_c, warps = _tile(n_rows, n_cols)
            _tile_forward_kernel[(triton.cdiv(n_rows, block_r),)](x2, y, lse, n_rows, n_cols{self.hargs()},
                                                                  BLOCK_R=block_r, BLOCK_C=block_c, num_warps=warps)
        else:
            block_c = min(CHUNK, triton.next_power_of_2(n_cols))
            splits = max(1, min(triton.cdiv(n_cols, MIN_SEGMENT), triton.cdiv(TARGET_PROGRAMS, n_rows)))
            seg_len = triton.cdiv(triton.cdiv(n_cols, splits), block_c) * block_c
            splits = triton.cdiv(n_cols, seg_len)
            part_m = torch.empty((n_rows, splits), dtype=torch.float32, device=x.device)
            part_s = torch.empty((n_rows, splits), dtype=torch.float32, device=x.device)
            _stats_kernel[(n_rows, splits)](x2, part_m, part_s, n_cols, seg_len, splits{self.hargs()},
                                            BLOCK_C=block_c, num_warps=LOOP_WARPS)
            _write_kernel[(n_rows, splits)](x2, y, lse, part_m, part_s, n_cols, seg_len, splits{self.hargs()},
                                            BLOCK_C=block_c, BLOCK_S=max(16, triton.next_power_of_2(splits)),
                                            num_warps=LOOP_WARPS)
    return y.view(x.shape), lse.view(x.shape[:-1])
'''

    def forward_body(self) -> str:
        args = ", ".join([self.x, *(f"float(self.{s})" for s in self.scalars)])
        if self.backward:
            return f"return _Softmax.apply({args})"
        lse = f"lse.to({self.x}.dtype)"
        result = {"softmax": "y", "log_softmax": "y", "lse": lse, "softmax+lse": f"y, {lse}"}[self.mode]
        return f"y, lse = _softmax_forward({args})\nreturn {result}"

    # ------------------------------------------------------------------------------------ backward

    def _dz(self, indent: str, per_row: str) -> str:
        """Statements giving dz (d loss / d pre-op output) from y, dy, dlse and the row sums ``per_row``."""
        r = per_row
        if self.mode == "softmax":
            return f"{indent}dz = y * (dy - dot{r})\n"
        if self.mode == "softmax+lse":
            return f"{indent}dz = y * (dy - dot{r} + dlse{r})\n"
        if self.mode == "log_softmax":
            return f"{indent}dz = dy - tl.exp(y) * dot{r}\n"
        return f"{indent}dz = tl.exp(z - lse{r}) * dlse{r}\n"

    def _dx(self, indent: str) -> str:
        if self.pre.op == "input":
            return f"{indent}dx = dz\n"
        code, g = self.pre_grad(indent)
        return f"{code}{indent}dx = dz * {g}\n"

    def _loads(self, indent: str, offs: str, mask: str) -> str:
        lines = []
        if self.mode != "lse":
            lines += [f"y = tl.load(y_ptr + {offs}, mask={mask}, other=0.0).to(tl.float32)",
                      f"dy = tl.load(dy_ptr + {offs}, mask={mask}, other=0.0).to(tl.float32)"]
        if self.mode == "lse" or self.pre.op != "input":
            lines.append(f"x = tl.load(x_ptr + {offs}, mask={mask}, other=0.0).to(tl.float32)")
        return "".join(f"{indent}{line}\n" for line in lines)

    def _dot(self) -> str:
        return "dy" if self.mode == "log_softmax" else "y * dy"

    def tile_backward(self) -> str:
        pre = ""
        if self.mode == "lse":
            code, z = self.pre_code("    ")
            pre = f"{code}    z = {z}\n"
        row_loads = ""
        if self.mode in ("lse", "softmax+lse"):
            row_loads += "    dlse = tl.load(dlse_ptr + rows, mask=rmask, other=0.0).to(tl.float32)\n"
        if self.mode == "lse":
            row_loads += "    lse = tl.load(lse_ptr + rows, mask=rmask, other=0.0)\n"
        dot = "" if self.mode == "lse" else f"    dot = tl.sum({self._dot()}, axis=1)\n"
        return f'''
@triton.jit
def _tile_backward_kernel(dy_ptr, dlse_ptr, x_ptr, y_ptr, lse_ptr, dx_ptr, n_rows, n_cols{self.sargs()},
                          BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    # whole rows in registers: reads y and dy (or x) once, writes dx once
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_C)
    rmask = rows < n_rows
    mask = rmask[:, None] & (cols[None, :] < n_cols)
    offs = rows.to(tl.int64)[:, None] * n_cols + cols[None, :]
{self._loads("    ", "offs", "mask")}{row_loads}{pre}{dot}{self._dz("    ", "[:, None]")}{self._dx("    ")}    tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)
'''

    def loop_backward(self) -> str:
        first = ""
        if self.mode != "lse":
            first = f'''    acc = tl.zeros([BLOCK_C], dtype=tl.float32)
    for c0 in range(0, n_cols, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        mask = cols < n_cols
{self._loads("        ", "base + cols", "mask")}        acc += {self._dot()}
    dot = tl.sum(acc, axis=0)
'''
        row_loads = ""
        if self.mode in ("lse", "softmax+lse"):
            row_loads += "    dlse = tl.load(dlse_ptr + row).to(tl.float32)\n"
        if self.mode == "lse":
            row_loads += "    lse = tl.load(lse_ptr + row)\n"
        pre = ""
        if self.mode == "lse":
            code, z = self.pre_code("        ")
            pre = f"{code}        z = {z}\n"
        return f'''
@triton.jit
def _loop_backward_kernel(dy_ptr, dlse_ptr, x_ptr, y_ptr, lse_ptr, dx_ptr, n_cols{self.sargs()},
                          BLOCK_C: tl.constexpr):
    # one program per row: pass 1 sums over the row, pass 2 writes dx (two reads of y and dy)
    row = tl.program_id(0)
    base = tl.cast(row, tl.int64) * n_cols
{row_loads}{first}    for c0 in range(0, n_cols, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        mask = cols < n_cols
{self._loads("        ", "base + cols", "mask")}{pre}{self._dz("        ", "")}{self._dx("        ")}        tl.store(dx_ptr + base + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
'''

    def backward_host(self) -> str:
        x = self.x
        outputs = {"softmax": "y", "log_softmax": "y", "lse": f"lse.to({x}.dtype)",
                   "softmax+lse": f"y, lse.to({x}.dtype)"}[self.mode]
        grads = {"softmax": "dy", "log_softmax": "dy", "lse": "dlse", "softmax+lse": "dy, dlse"}[self.mode]
        passed = {"softmax": "dy, None", "log_softmax": "dy, None", "lse": "None, dlse",
                  "softmax+lse": "dy, dlse"}[self.mode]
        return f'''
def _softmax_backward(dy, dlse, x2, y, lse{self.hargs()}):
    n_rows, n_cols = x2.shape
    dy = dy.contiguous().view(n_rows, n_cols) if dy is not None else x2  # not read without y
    dlse = dlse.contiguous().view(n_rows) if dlse is not None else torch.zeros_like(lse)
    dx = torch.empty_like(x2)
    if n_rows and n_cols:
        if triton.next_power_of_2(n_cols) <= MAX_SINGLE:
            block_r, block_c, warps = _tile(n_rows, n_cols)
            _tile_backward_kernel[(triton.cdiv(n_rows, block_r),)](dy, dlse, x2, y, lse, dx, n_rows, n_cols{self.hargs()},
                                                                   BLOCK_R=block_r, BLOCK_C=block_c, num_warps=warps)
        else:
            _loop_backward_kernel[(n_rows,)](dy, dlse, x2, y, lse, dx, n_cols{self.hargs()},
                                             BLOCK_C=min(CHUNK, triton.next_power_of_2(n_cols)), num_warps=LOOP_WARPS)
    return dx


class _Softmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, {x}{self.hargs()}):
        y, lse = _softmax_forward({x}{self.hargs()})
        x2, _, _ = _rows({x})
        ctx.save_for_backward(x2, y, lse)
        ctx.shape = {x}.shape
        ctx.scalars = ({"".join(s + ", " for s in self.scalars)})
        return {outputs}

    @staticmethod
    def backward(ctx, {grads}):
        x2, y, lse = ctx.saved_tensors
        dx = _softmax_backward({passed}, x2, y.reshape(x2.shape), lse.view(-1), *ctx.scalars)
        return (dx.view(ctx.shape),) + (None,) * len(ctx.scalars)
'''
