"""Elementwise chains over same-shape inputs that also read row statistics of them: sums, means and
extremes over the last dimension kept as ``[rows, 1]`` (``probs * (g - (probs * g).sum(-1, keepdim=True))``,
the softmax backward; ``F.normalize(x, dim=-1)``, which the reader writes as ``x / max(sqrt(sum(x²)), eps)``);
forward, and backward when every statistic is a sum or mean.

Budget per call, ``M`` rows of ``N``, ``I`` inputs, ``K`` statistics, ``f`` FLOPs per element of all chains:
  forward, rows up to MAX_SINGLE: reads I·M·N·elem once, writes M·N·elem; f·M·N FLOPs. A program holds
            whole rows in registers (several short rows per program, ``TILE``).
  forward, longer rows: one program per row walks it twice in CHUNK-wide pieces (statistics, then the
            output): 2·I·M·N·elem read, M·N·elem written.
  backward  the statistics are kept from the forward (K·M·4 bytes). dx = dy·∂F/∂x + Σ_k s_k·∂g_k/∂x with
            s_k = Σ_row dy·∂F/∂r_k (r_k = Σ g_k(x)): rows up to MAX_SINGLE read the inputs and dy once and
            write each gradient once; longer rows read them twice. About 3·f·M·N FLOPs.
"""

from __future__ import annotations

from dataclasses import replace

from kernellab.kernels.elementwise import kernel_leaf, leaves_of
from kernellab.kernels.reference_model import Node, ReferenceModel
from kernellab.kernels.rows import LOOP_KNOBS, ROWS_HOST, SINGLE_KNOBS, TILE_HOST, last_dim
from kernellab.kernels.template import Match, Template, assemble, register_template
from kernellab.kernels.triton_expr import NotElementwise, TritonExpr, flops_per_element, helper_source, is_elementwise
from kernellab.tasks.model import Task

_STATISTICS = {"sum": ("0.0", "tl.sum"), "mean": ("0.0", "tl.sum"), "amax": ('float("-inf")', "tl.max"),
               "amin": ('float("inf")', "tl.min")}
_UPDATE = {"sum": "{acc} += tl.where(mask, {g}, 0.0)", "mean": "{acc} += tl.where(mask, {g}, 0.0)",
           "amax": '{acc} = tl.maximum({acc}, tl.where(mask, {g}, float("-inf")))',
           "amin": '{acc} = tl.minimum({acc}, tl.where(mask, {g}, float("inf")))'}


def _statistic_leaf(k: int) -> Node:
    return Node("input", name=f"__r{k}")


def _leaf(node: Node) -> str:
    """Kernel names: inputs and scalars as the elementwise template names them, statistics broadcast."""
    if node.op == "input" and node.name.startswith("__r"):
        return f"r{node.name[3:]}[:, None]"
    return kernel_leaf(node)


@register_template("row_epilogue")
class RowEpilogueTemplate(Template):
    categories = frozenset({"softmax", "normalization", "reductions", "fusion"})
    budget = __doc__

    def match(self, task: Task, model: ReferenceModel) -> Match | None:
        if len(model.outputs) != 1:
            return None
        out = model.outputs[0]
        stats: list[Node] = []
        for node in out.walk():
            if node.op in _STATISTICS and node not in stats:
                stats.append(node)
        if not stats:
            return None

        def inputs_and_scalars(leaf: Node) -> bool:
            return leaf.op in ("input", "scalar")

        for stat in stats:
            if {k for k, _ in stat.kw} != {"dim", "keepdim"} or stat.const("keepdim") is not True \
                    or not is_elementwise(stat.args[0], inputs_and_scalars):
                return None
        index = {stat: k for k, stat in enumerate(stats)}

        def swap(node: Node) -> Node:
            if node in index:
                return _statistic_leaf(index[node])
            return replace(node, args=tuple(swap(a) for a in node.args), kw=tuple((k, swap(v)) for k, v in node.kw))

        body = swap(out)
        if not is_elementwise(body, inputs_and_scalars):
            return None
        inputs = [n for n in leaves_of(body)[0] if not n.startswith("__r")]
        if not inputs:  # the output would have the statistics' [rows, 1] shape
            return None
        for stat in stats:
            inputs += [n for n in leaves_of(stat.args[0])[0] if n not in inputs]
        if len({model.input_ranks.get(n) for n in inputs} - {None}) > 1 \
                or not all(last_dim(s, model, inputs[0]) for s in stats):
            return None
        scalars: list[str] = []
        for tree in (body, *(s.args[0] for s in stats)):
            scalars += [s for s in leaves_of(tree)[2] if s not in scalars]
        wrt: list[str] = []
        if task.backward:
            wrt = [n for n in inputs if n in task.grad_inputs]
            if not wrt or any(s.op not in ("sum", "mean") for s in stats):
                return None
            try:
                probe = TritonExpr(_leaf)
                for k in range(len(stats)):
                    probe.grad(body, _statistic_leaf(k))
                for name in wrt:
                    probe.grad(body, Node("input", name=name))
                    for stat in stats:
                        probe.grad(stat.args[0], Node("input", name=name))
            except NotElementwise:
                return None
        kinds = [s.op for s in stats]
        flops = flops_per_element(body) + sum(flops_per_element(s.args[0]) + 1 for s in stats)
        what = "forward + backward" if wrt else "forward"
        return Match(self, task, model, {"body": body, "stats": [s.args[0] for s in stats], "kinds": kinds,
                                         "inputs": inputs, "scalars": scalars, "wrt": wrt, "flops": flops},
                     summary=f"elementwise chain over row {', '.join(kinds)} statistics, {what}")

    def knobs(self, match: Match):
        return SINGLE_KNOBS + LOOP_KNOBS

    def presets(self, match: Match) -> list[dict[str, int]]:
        return [{"TILE": 8192, "ELEMS_PER_WARP": 256}, {"TILE": 2048, "CHUNK": 2048}]

    def render(self, match: Match, params: dict[str, int]) -> str:
        r = _Render(match)
        kernels = r.forward_kernels()
        host = ROWS_HOST + TILE_HOST + r.forward_host()
        call = ", ".join([*r.inputs, *(f"float(self.{s})" for s in r.scalars)])
        body = f"return _forward({call})[0]"
        if r.wrt:
            kernels += r.backward_kernels()
            host += r.backward_host()
            body = f"return _Epilogue.apply({call})"
        doc = f"Template `row_epilogue` for {match.task.id}: {match.summary}.\n\n" + \
            (__doc__ or "").split("\n\n", 1)[1]
        return assemble(doc, match, params, helper_source(r.helpers) + kernels, host, body)


class _Render:
    def __init__(self, match: Match):
        spec = match.spec
        self.body: Node = spec["body"]
        self.stats: list[Node] = spec["stats"]
        self.kinds: list[str] = spec["kinds"]
        self.inputs: list[str] = spec["inputs"]
        self.scalars: list[str] = spec["scalars"]
        self.wrt: list[str] = spec["wrt"]
        self.helpers: set[str] = set()

    # ------------------------------------------------------------------------------------ pieces

    def ptrs(self) -> str:
        return ", ".join(f"x_{n}_ptr" for n in self.inputs)

    def r_ptrs(self) -> str:
        return "".join(f", r{k}_ptr" for k in range(len(self.stats)))

    def sargs(self) -> str:
        return "".join(f", s_{s}" for s in self.scalars)

    def hargs(self) -> str:
        return "".join(f", {s}" for s in self.scalars)

    def loads(self, indent: str) -> str:
        return "\n".join(f"{indent}x_{n} = tl.load(x_{n}_ptr + offs, mask=mask, other=1.0).to(tl.float32)"
                         for n in self.inputs)

    def statistic_code(self, indent: str, accumulate: bool) -> str:
        """Each statistic's chain, then (``accumulate``) added into its accumulator, else reduced to ``r<k>``."""
        expr = TritonExpr(_leaf, indent=indent, prefix="g")
        values = [expr.value(s) for s in self.stats]
        self.helpers |= expr.helpers
        lines = [expr.code()] if expr.lines else []
        for k, (kind, g) in enumerate(zip(self.kinds, values)):
            init, reduce = _STATISTICS[kind]
            if accumulate:
                lines.append(indent + _UPDATE[kind].format(acc=f"acc{k}", g=g))
            else:
                masked = f"tl.where(mask, {g}, {init})"
                lines.append(f"{indent}r{k} = {reduce}({masked}, axis=1){' / n_cols' if kind == 'mean' else ''}")
        return "\n".join(lines)

    def output_code(self, indent: str) -> str:
        expr = TritonExpr(_leaf, indent=indent, prefix="t")
        y = expr.value(self.body)
        self.helpers |= expr.helpers
        return (expr.code() + "\n" if expr.lines else "") + \
            f"{indent}tl.store(out_ptr + offs, ({y}).to(out_ptr.dtype.element_ty), mask=mask)"

    def save(self, indent: str) -> str:
        return "\n".join(f"{indent}    tl.store(r{k}_ptr + rows, r{k}, mask=rmask)" for k in range(len(self.stats)))

    # ------------------------------------------------------------------------------------ forward

    def forward_kernels(self) -> str:
        accs = "\n".join(f"    acc{k} = tl.full([BLOCK_R, BLOCK_C], {_STATISTICS[kind][0]}, tl.float32)"
                         for k, kind in enumerate(self.kinds))
        reduce = "\n".join(f"    r{k} = {_STATISTICS[kind][1]}(acc{k}, axis=1){' / n_cols' if kind == 'mean' else ''}"
                           for k, kind in enumerate(self.kinds))
        head = '''    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = rows < n_rows
    base = rows.to(tl.int64)[:, None] * n_cols'''
        return f'''
@triton.jit
def _single_kernel({self.ptrs()}, out_ptr{self.r_ptrs()}, n_rows, n_cols{self.sargs()}, BLOCK_R: tl.constexpr,
                   BLOCK_C: tl.constexpr, SAVE: tl.constexpr):
    # whole rows in registers: reads each input once, the statistics, then writes the output once
{head}
    cols = tl.arange(0, BLOCK_C)
    mask = rmask[:, None] & (cols[None, :] < n_cols)
    offs = base + cols[None, :]
{self.loads("    ")}
{self.statistic_code("    ", accumulate=False)}
    if SAVE:
{self.save("    ")}
{self.output_code("    ")}


@triton.jit
def _loop_kernel({self.ptrs()}, out_ptr{self.r_ptrs()}, n_rows, n_cols{self.sargs()}, BLOCK_R: tl.constexpr,
                 BLOCK_C: tl.constexpr, SAVE: tl.constexpr):
    # long rows: the statistics over BLOCK_C-wide pieces, then the output over them again
{head}
{accs}
    for c0 in range(0, n_cols, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        mask = rmask[:, None] & (cols[None, :] < n_cols)
        offs = base + cols[None, :]
{self.loads("        ")}
{self.statistic_code("        ", accumulate=True)}
{reduce}
    if SAVE:
{self.save("    ")}
    for c0 in range(0, n_cols, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        mask = rmask[:, None] & (cols[None, :] < n_cols)
        offs = base + cols[None, :]
{self.loads("        ")}
{self.output_code("        ")}
'''

    def forward_host(self) -> str:
        first = self.inputs[0]
        dtype = f"{first}.dtype"
        for n in self.inputs[1:]:
            dtype = f"torch.promote_types({dtype}, {n}.dtype)"
        views = "".join(f"    {n}_, n_rows_, n_cols_ = _rows({n})\n" for n in self.inputs)
        tensors = ", ".join(f"{n}_" for n in self.inputs)
        stats = len(self.stats)
        same = "".join(f"    if {n}.shape != {first}.shape:\n        raise ValueError('row_epilogue: inputs of "
                       f"different shapes')\n" for n in self.inputs[1:])
        return f'''
def _forward({", ".join(self.inputs)}{self.hargs()}, save=False):
    """The output and, to keep for a backward, the rows' statistics (fp32)."""
{same}{views}    out_ = torch.empty(({first}_.shape[0], n_cols_), dtype={dtype}, device={first}.device)
    stats_ = [torch.empty(n_rows_, dtype=torch.float32, device={first}.device) for _ in range({stats})] if save \\
        else [out_] * {stats}
    if n_rows_ and n_cols_:
        if triton.next_power_of_2(n_cols_) <= MAX_SINGLE:
            block_r, block_c, warps = _tile(n_rows_, n_cols_)
            _single_kernel[(triton.cdiv(n_rows_, block_r),)]({tensors}, out_, *stats_, n_rows_, n_cols_{self.hargs()},
                                                             BLOCK_R=block_r, BLOCK_C=block_c, SAVE=save,
                                                             num_warps=warps)
        else:
            _loop_kernel[(n_rows_,)]({tensors}, out_, *stats_, n_rows_, n_cols_{self.hargs()}, BLOCK_R=1,
                                     BLOCK_C=CHUNK, SAVE=save, num_warps=LOOP_WARPS)
    return out_.view({first}.shape), stats_
'''

    # ------------------------------------------------------------------------------------ backward

    def _gradient_code(self, indent: str, part: str) -> str:
        """``part`` "s": each row sum s<k> of dy·∂F/∂r<k> accumulated; "dx": each gradient stored."""
        expr = TritonExpr(_leaf, indent=indent, prefix="d")
        lines: list[str] = []
        if part == "s":
            for k in range(len(self.stats)):
                d = expr.grad(self.body, _statistic_leaf(k)) or "0.0"
                lines.append(f"{indent}acc{k} += tl.where(mask, dy * {d}, 0.0)")
        else:
            for name in self.wrt:
                terms = []
                direct = expr.grad(self.body, Node("input", name=name))
                if direct is not None:
                    terms.append(f"dy * {direct}")
                for k, stat in enumerate(self.stats):
                    inner = expr.grad(stat, Node("input", name=name))
                    if inner is not None:
                        terms.append(f"s{k}[:, None] * {inner}")
                lines.append(f"{indent}tl.store(dx_{name}_ptr + offs, ({' + '.join(terms) or '0.0 * dy'})"
                             f".to(dx_{name}_ptr.dtype.element_ty), mask=mask)")
        self.helpers |= expr.helpers
        return (expr.code() + "\n" if expr.lines else "") + "\n".join(lines)

    def backward_kernels(self) -> str:
        k_stats = range(len(self.stats))
        dx_ptrs = "".join(f", dx_{n}_ptr" for n in self.wrt)
        load_r = "\n".join(f"    r{k} = tl.load(r{k}_ptr + rows, mask=rmask, other=1.0)" for k in k_stats)
        accs = "\n".join(f"    acc{k} = tl.zeros([BLOCK_R, BLOCK_C], dtype=tl.float32)" for k in k_stats)
        # an infinite or NaN row sum (a derivative that is infinite where the statistic is, as a square
        # root's at a zero row) counts as 0: the subgradient PyTorch takes there
        finish = "\n".join(f"    s{k} = tl.sum(acc{k}, axis=1)\n    s{k} = tl.where(tl.abs(s{k}) < float(\"inf\"), s{k}, "
                           f"0.0){' / n_cols' if kind == 'mean' else ''}" for k, kind in zip(k_stats, self.kinds))
        head = f'''    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = rows < n_rows
    base = rows.to(tl.int64)[:, None] * n_cols
{load_r}
{accs}'''
        loads = self.loads("        ") + "\n        dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)"
        loop = '''    for c0 in range(0, n_cols, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        mask = rmask[:, None] & (cols[None, :] < n_cols)
        offs = base + cols[None, :]
'''
        return f'''

@triton.jit
def _backward_kernel(dy_ptr, {self.ptrs()}{self.r_ptrs()}{dx_ptrs}, n_rows, n_cols{self.sargs()},
                     BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    # the rows' sums of dy·∂F/∂r_k over BLOCK_C-wide pieces (one piece when rows fit), then each gradient:
    # dy·∂F/∂x + Σ_k s_k·∂g_k/∂x
{head}
{loop}{loads}
{self._gradient_code("        ", "s")}
{finish}
{loop}{loads}
{self._gradient_code("        ", "dx")}
'''

    def backward_host(self) -> str:
        tensors = ", ".join(self.inputs)
        views = ", ".join(f"_rows({n})[0]" for n in self.inputs)
        allocs = "".join(f"        dx_{n} = torch.empty_like({n}_[0])\n" for n in self.wrt)
        dx_args = "".join(f", dx_{n}" for n in self.wrt)
        returns = ", ".join([*(f"dx_{n}.view({n}_[1])" if n in self.wrt else "None" for n in self.inputs),
                             *("None" for _ in self.scalars)])
        unpack = "".join(f"        {n}_ = (_rows({n})[0], {n}.shape)\n" for n in self.inputs)
        return f'''

class _Epilogue(torch.autograd.Function):
    @staticmethod
    def forward(ctx, {tensors}{self.hargs()}):
        out_, stats_ = _forward({tensors}{self.hargs()}, save=True)
        ctx.save_for_backward({tensors}, *stats_)
        ctx.scalars = ({"".join(s + ", " for s in self.scalars)})
        return out_

    @staticmethod
    def backward(ctx, dy):
        saved = ctx.saved_tensors
        {tensors}{"," if len(self.inputs) == 1 else ""} = saved[:{len(self.inputs)}]
        stats_ = saved[{len(self.inputs)}:]
{unpack}{allocs}        dy_, n_rows_, n_cols_ = _rows(dy)
        if n_rows_ and n_cols_:
            if triton.next_power_of_2(n_cols_) <= MAX_SINGLE:
                block_r, block_c, warps = _tile(n_rows_, n_cols_)
            else:
                block_r, block_c, warps = 1, CHUNK, LOOP_WARPS
            _backward_kernel[(triton.cdiv(n_rows_, block_r),)](dy_, {views}, *stats_{dx_args}, n_rows_, n_cols_,
                                                               *ctx.scalars, BLOCK_R=block_r, BLOCK_C=block_c,
                                                               num_warps=warps)
        return {returns}
'''
