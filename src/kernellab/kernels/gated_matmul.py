"""A gated MLP's gate and up projections with the activation fused: act(x·W_gᵀ) * (x·W_uᵀ) as one kernel
that keeps both products of an output tile in registers, so neither is written to memory (Llama's
``silu(gate_proj(x)) * up_proj(x)``, a merged ``gate_up_proj(x).chunk(2, -1)``, GeGLU). Any elementwise
chain of the two products and scalar attributes is the epilogue. Backward where the task asks: the
forward also stores both products, one elementwise kernel writes [dG | dU], and the template's plain
matmul kernels give dX = [dG | dU]·[W_g; W_u] and [dW_g; dW_u] = [dG | dU]ᵀ·X.

Budget per call, x (M x K), each weight (N x K):
  forward   4·M·N·K + f·M·N FLOPs; A is read once per BLOCK_N columns, each weight once per BLOCK_M
            rows (before L2 reuse); writes M·N·elem (backward: 3·M·N·elem, the products too).
  backward  reads dY, G, U once and writes 2·M·N·elem; then 4·M·N·K FLOPs for dX and 4·M·N·K for dW.
"""

from __future__ import annotations

from kernellab.kernels.matmul import _renamed, matmul_knobs
from kernellab.kernels.matmul import _Render as _MatmulRender
from kernellab.kernels.reference_model import Node, ReferenceModel
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

G = Node("input", name="@g")
U = Node("input", name="@u")

# The matmul template's knobs with tiles of its own (BLOCK_N half the matmul's: a tile holds two
# accumulators); split-K and the TMA kernel serve the backward's plain products, which run the matmul
# template's kernels.
KNOBS = matmul_knobs((128, 64, 64, 8, 3), (64, 32, 32, 4, 3), columns=": two accumulators each", panels="weight",
                     products="backward products: ")


def _replace(node: Node, mapping: dict[Node, Node]) -> Node:
    if node in mapping:
        return mapping[node]
    if not node.args and not node.kw:
        return node
    return Node(node.op, tuple(_replace(a, mapping) for a in node.args),
                tuple((k, _replace(v, mapping)) for k, v in node.kw), node.name, node.value)


def _no_bias(linear: Node) -> bool:
    bias = linear.kwarg("bias")
    return bias is None or (bias.op == "const" and bias.value is None)


@register_template("gated_matmul")
class GatedMatmulTemplate(Template):
    categories = frozenset({"matmul_epilogue", "gated_mlp", "fusion"})
    budget = __doc__

    def match(self, task: Task, model: ReferenceModel) -> Match | None:
        if len(model.outputs) != 1:
            return None
        out = model.outputs[0]
        linears = {n for n in out.walk() if n.op == "linear"}
        if not linears or not all(_no_bias(n) and n.args[0].op == "input" and
                                  (n.kwarg("weight") or Node("const")).op == "param" for n in linears):
            return None
        if len({n.args[0] for n in linears}) != 1:
            return None
        x = next(iter(linears)).args[0].name
        if len(linears) == 1:  # merged: gate_up(x).chunk(2, -1)
            (linear,) = linears
            halves = {n for n in out.walk() if n.op == "cols" and n.args[0] == linear}
            if {h.value for h in halves} != {("chunk", 0, 2), ("chunk", 1, 2)}:
                return None
            mapping = {h: (G if h.value[1] == 0 else U) for h in halves}
            weights = (linear.kwarg("weight").name,)
        elif len(linears) == 2:
            first, second = sorted(linears, key=lambda n: n.kwarg("weight").name)
            mapping = {first: G, second: U}
            weights = (first.kwarg("weight").name, second.kwarg("weight").name)
        else:
            return None
        tree = _replace(out, mapping)
        leaves = {n for n in tree.walk() if n.op in ("input", "param", "scalar", "cols", "linear")}
        if not {G, U} <= leaves or not is_elementwise(tree, lambda n: n in (G, U) or n.op == "scalar"):
            return None
        if task.backward:
            if not set(task.grad_inputs) <= {x}:
                return None
            try:
                probe = TritonExpr(lambda n: "g" if n == G else "u" if n == U else f"s_{n.name}")
                probe.grad(tree, G), probe.grad(tree, U)
            except NotElementwise:
                return None
        scalars = list(dict.fromkeys(n.name for n in tree.walk() if n.op == "scalar"))
        spec = {"x": x, "weights": weights, "tree": tree, "scalars": scalars, "backward": task.backward,
                "tf32": task.fp32_precision == "tf32", "flops": flops_per_element(tree)}
        what = "forward + backward" if task.backward else "forward"
        form = "one merged weight" if len(weights) == 1 else "two weights"
        return Match(self, task, model, spec, summary=f"gate and up products with a fused activation ({form}), {what}")

    def knobs(self, match: Match) -> list[KnobSpec]:
        return KNOBS if match.spec["backward"] else KNOBS[:11] + KNOBS[-1:]

    def presets(self, match: Match) -> list[dict[str, int]]:
        return [{"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "NUM_WARPS": 8, "NUM_STAGES": 3},
                {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "NUM_WARPS": 4, "NUM_STAGES": 4}]

    def render(self, match: Match, params: dict[str, int]) -> str:
        spec = match.spec
        expr = TritonExpr(lambda n: "acc_g" if n == G else "acc_u" if n == U else f"s_{n.name}", indent="    ")
        result = expr.value(spec["tree"])
        helpers = set(expr.helpers)
        sig = "".join(f", s_{s}" for s in spec["scalars"])
        kernels = _KERNEL.format(scalars=sig, epilogue=expr.code(), result=result)
        host = _host(spec)
        if spec["backward"]:
            plain = _MatmulRender({"inputs": [], "params": [], "scalars": [], "epilogue": Node("input", name="@acc"),
                                   "z": Node("input", name="@acc"), "save_z": False, "tf32": spec["tf32"],
                                   "layout": "2d"})
            plain.prepare()
            kernels += _renamed(plain.kernels())
            host = plain.helpers_host() + _renamed(plain.host()) + host
            grad = TritonExpr(lambda n: "g" if n == G else "u" if n == U else f"s_{n.name}")
            dg, du = grad.grad(spec["tree"], G) or "0.0", grad.grad(spec["tree"], U) or "0.0"
            helpers |= grad.helpers
            kernels += _GRAD_KERNEL.format(scalars=sig, code=grad.code(), dg=dg, du=du)
        doc = f"Template `gated_matmul` for {match.task.id}: {match.summary}.\n\n" + (__doc__ or "").split("\n\n", 1)[1]
        return assemble(doc, match, params, helper_source(helpers) + kernels, host, _forward_body(spec))


_KERNEL = '''
@triton.jit
def _gated_matmul_kernel(a_ptr, wg_ptr, wu_ptr, c_ptr, g_ptr, u_ptr, M, N, K, stride_am, stride_ak, stride_gn,
                         stride_gk, stride_un, stride_uk{scalars}, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, SAVE: tl.constexpr,
                         PRECISION: tl.constexpr):
    # one BLOCK_M x BLOCK_N tile of both products from the same A tiles: 4 * BLOCK_M * BLOCK_N * K FLOPs;
    # the activation runs on the accumulators, so neither product reaches memory (unless SAVE)
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    width = GROUP_M * num_pid_n
    first_m = (pid // width) * GROUP_M
    size_m = tl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % width) % size_m
    pid_n = (pid % width) // size_m
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm.to(tl.int64)[:, None] * stride_am + rk[None, :] * stride_ak
    g_ptrs = wg_ptr + rn.to(tl.int64)[None, :] * stride_gn + rk[:, None] * stride_gk
    u_ptrs = wu_ptr + rn.to(tl.int64)[None, :] * stride_un + rk[:, None] * stride_uk
    acc_g = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_u = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kmask = k0 + rk < K
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & kmask[None, :], other=0.0)
        bmask = kmask[:, None] & (rn[None, :] < N)
        wg = tl.load(g_ptrs, mask=bmask, other=0.0)
        wu = tl.load(u_ptrs, mask=bmask, other=0.0)
        acc_g = tl.dot(a, wg, acc=acc_g, input_precision=PRECISION)
        acc_u = tl.dot(a, wu, acc=acc_u, input_precision=PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        g_ptrs += BLOCK_K * stride_gk
        u_ptrs += BLOCK_K * stride_uk
    cmask = (rm[:, None] < M) & (rn[None, :] < N)
    offs = rm.to(tl.int64)[:, None] * N + rn[None, :]
{epilogue}
    tl.store(c_ptr + offs, ({result}).to(c_ptr.dtype.element_ty), mask=cmask)
    if SAVE:
        tl.store(g_ptr + offs, acc_g.to(g_ptr.dtype.element_ty), mask=cmask)
        tl.store(u_ptr + offs, acc_u.to(u_ptr.dtype.element_ty), mask=cmask)
'''

_GRAD_KERNEL = '''

@triton.jit
def _gated_grad_kernel(dy_ptr, g_ptr, u_ptr, dgu_ptr, n_elements, N{scalars}, BLOCK: tl.constexpr):
    # [dG | dU] (M x 2N) from dY, G and U (M x N): reads 3, writes 2 elements per output element
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    row = offs // N
    col = offs - row * N
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    g = tl.load(g_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(u_ptr + offs, mask=mask, other=0.0).to(tl.float32)
{code}
    tl.store(dgu_ptr + row * 2 * N + col, (dy * {dg}).to(dgu_ptr.dtype.element_ty), mask=mask)
    tl.store(dgu_ptr + row * 2 * N + N + col, (dy * {du}).to(dgu_ptr.dtype.element_ty), mask=mask)
'''


def _host(spec: dict) -> str:
    scalars = "".join(f", {s}" for s in spec["scalars"])
    precision = "tf32" if spec["tf32"] else "ieee"
    text = f'''
def _gated_matmul(a, wg, wu{scalars}, save=False):
    """act(a @ wg.T) * (a @ wu.T) (the epilogue's chain), a (M x K), wg and wu (N x K); with ``save``
    also the two products."""
    M, K = a.shape
    N = wg.shape[0]
    dtype = torch.promote_types(a.dtype, wg.dtype)
    c = torch.empty((M, N), dtype=dtype, device=a.device)
    g = torch.empty((M, N) if save else (1,), dtype=dtype, device=a.device)
    u = torch.empty((M, N) if save else (1,), dtype=dtype, device=a.device)
    if M == 0 or N == 0:
        return c, g, u
    if a.dtype == torch.float32:
        bm, bn, bk, warps, stages = BLOCK_M_F32, BLOCK_N_F32, BLOCK_K_F32, NUM_WARPS_F32, NUM_STAGES_F32
        precision = "tf32x3" if F32_SPLIT else "{precision}"
    else:
        bm, bn, bk, warps, stages = BLOCK_M, BLOCK_N, BLOCK_K, NUM_WARPS, NUM_STAGES
        precision = "tf32"
    bm = max(16, min(bm, triton.next_power_of_2(M)))
    bn = max(16, min(bn, triton.next_power_of_2(N)))
    bk = max(16, min(bk, triton.next_power_of_2(max(K, 1))))
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    _gated_matmul_kernel[grid](a, wg, wu, c, g, u, M, N, K, a.stride(0), a.stride(1), wg.stride(0), wg.stride(1),
                               wu.stride(0), wu.stride(1){scalars}, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                               GROUP_M=GROUP_M, SAVE=save, PRECISION=precision, num_warps=warps,
                               num_stages=stages)
    return c, g, u
'''
    if not spec["backward"]:
        return text
    merged = len(spec["weights"]) == 1
    wargs = "w" if merged else "wg, wu"
    halves = "w[:n], w[n:]" if merged else "wg, wu"
    wcat = "w" if merged else "torch.cat([wg, wu])"
    dws = "dw" if merged else "dw[:n], dw[n:]"
    nones = ", None" * len(spec["scalars"])
    return text + f'''

class _GatedMatmul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, {wargs}{scalars}):
        n = {"w.shape[0] // 2" if merged else "wg.shape[0]"}
        save = any(ctx.needs_input_grad)
        c, g, u = _gated_matmul(a, {halves}{scalars}, save=save)
        ctx.save_for_backward(a, {wargs}, g, u)
        ctx.scalars = ({"".join(s + ", " for s in spec["scalars"])})
        return c

    @staticmethod
    def backward(ctx, dy):
        a, {wargs}, g, u = ctx.saved_tensors
        dy = dy.contiguous()
        M, n = dy.shape
        dgu = torch.empty((M, 2 * n), dtype=dy.dtype, device=dy.device)
        if dy.numel():
            _gated_grad_kernel[(triton.cdiv(dy.numel(), 1024),)](dy, g, u, dgu, dy.numel(), n, *ctx.scalars,
                                                                 BLOCK=1024, num_warps=4)
        da = _mm(dgu, {wcat}) if ctx.needs_input_grad[0] else None
        dw = _mm(dgu.t(), a)
        return (da, {dws}{nones})
'''


def _forward_body(spec: dict) -> str:
    x = spec["x"]
    ws = spec["weights"]
    sargs = "".join(f", float(self.{s})" for s in spec["scalars"])
    if spec["backward"]:
        call = f"_GatedMatmul.apply(rows, {', '.join(f'self.{w}' for w in ws)}{sargs})"
    elif len(ws) == 1:
        call = f"_gated_matmul(rows, self.{ws[0]}[:n], self.{ws[0]}[n:]{sargs})[0]"
    else:
        call = f"_gated_matmul(rows, self.{ws[0]}, self.{ws[1]}{sargs})[0]"
    n = f"n = self.{ws[0]}.shape[0] // 2\n" if len(ws) == 1 and not spec["backward"] else ""
    return (f"rows = {x}.reshape(-1, {x}.shape[-1])\n{n}"
            f"out = {call}\n"
            f"return out.view(*{x}.shape[:-1], out.shape[-1])")
