"""Tiled matmul with a fused elementwise epilogue: ``A @ B`` with either operand transposed (``A @ B.t()``,
``A.t() @ B``, ``X.t() @ X``), ``torch.addmm``, ``nn.Linear`` (any leading dimensions), followed by any
elementwise chain of the result, per-column parameters, same-shape inputs and scalars
(``relu(linear(x))``, ``residual + gamma * proj(x)``, ``cap * tanh(lm_head(x) / cap)``). Backward where
the task asks, for plain products and ``nn.Linear`` (bias and an elementwise activation included): the
forward also stores the pre-activation Z, an elementwise kernel forms dZ = dY * act'(Z), and the same
matmul kernels give dA = dZ·Bᵀ, dB = Aᵀ·dZ (``nn.Linear``: dX = dZ·W, dW = dZᵀ·X, dbias = 1ᵀ·dZ).

On Hopper (and newer), 16-bit operands whose strides suit the tensor memory accelerator take a
persistent kernel: one program per SM walks the output tiles in grouped order, loading A and B tiles
through host-built TMA descriptors (``triton.tools.tensor_descriptor.TensorDescriptor``; out-of-bounds
reads come back zero, so ragged edges need no masks); elsewhere (other GPUs, the interpreter, split-K,
misaligned strides) the pointer kernel below runs.

Budget per call, C = A (M x K) @ B (K x N), ``e`` epilogue tensors of M x N, ``f`` epilogue FLOPs per
output:
  2·M·N·K + f·M·N FLOPs. A BLOCK_M x BLOCK_N tile reads BLOCK_M·K + K·BLOCK_N elements, so DRAM
  traffic is about (M·K·N/BLOCK_N + K·N·M/BLOCK_M)·elem before L2 reuse (GROUP_M tiles share an
  A panel in L2), plus (1 + e)·M·N·elem for the output and the epilogue's inputs.
  Split-K (few output tiles, long K): S programs per tile each take K/S and write fp32 partials
  (4·S·M·N bytes written and read back), a second kernel sums them in a fixed order and applies the
  epilogue: deterministic, no atomics.
Tiles per dtype: 16-bit inputs use BLOCK_* / NUM_WARPS / NUM_STAGES, float32 the *_F32 constants
(IEEE float32 runs on FMA units, TF32 on tensor cores: the task's fp32_precision decides; F32_SPLIT=1
runs IEEE tasks as three TF32 products of the operands' high and low parts, ``tf32x3``, whose error is
near float32's: the verifier's tolerance decides whether a task accepts it).
Backward adds: dZ pass 2·M·N·elem read, M·N·elem written; dA and dB 2·M·N·K FLOPs each.
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
from kernellab.kernels.triton_expr import (
    NotElementwise,
    TritonExpr,
    flops_per_element,
    helper_source,
    is_elementwise,
)
from kernellab.tasks.model import Task

ACC = Node("input", name="@acc")  # the matmul's result inside the epilogue tree


Tile = tuple[int, int, int, int, int]  # BLOCK_M, BLOCK_N, BLOCK_K, warps, pipelining stages


def matmul_knobs(tile16: Tile, tile32: Tile, *, columns: str = "", panels: str = "B",
                 products: str = "") -> list[KnobSpec]:
    """The knobs of this template's kernels: a tile for 16-bit and one for float32 inputs, the
    grouped tile order, split-K, the persistent TMA kernel and tf32x3. A template whose products run
    these kernels takes the same knobs with tiles of its own (``gated_matmul``); ``columns`` and
    ``panels`` say what its tiles hold, ``products`` which of its products split-K and TMA serve.
    The first 11 are the tiles' and the grouping's; F32_SPLIT is the last."""
    m, n, k, warps, stages = tile16
    m32, n32, k32, warps32, stages32 = tile32
    return [
        KnobSpec("BLOCK_M", m, "16..256", "output rows per tile (16-bit inputs)"),
        KnobSpec("BLOCK_N", n, "16..256", f"output columns per tile{columns} (16-bit inputs)"),
        KnobSpec("BLOCK_K", k, "16..128", "K step per iteration (16-bit inputs)"),
        KnobSpec("NUM_WARPS", warps, "2,4,8", "warps per tile (16-bit inputs)"),
        KnobSpec("NUM_STAGES", stages, "2,3,4,5", "software-pipelining stages (16-bit inputs)"),
        KnobSpec("BLOCK_M_F32", m32, "16..256", "output rows per tile (float32 inputs)"),
        KnobSpec("BLOCK_N_F32", n32, "16..256", "output columns per tile (float32 inputs)"),
        KnobSpec("BLOCK_K_F32", k32, "16..128", "K step per iteration (float32 inputs)"),
        KnobSpec("NUM_WARPS_F32", warps32, "2,4,8", "warps per tile (float32 inputs)"),
        KnobSpec("NUM_STAGES_F32", stages32, "2,3,4,5", "software-pipelining stages (float32 inputs)"),
        KnobSpec("GROUP_M", 8, "1..16", f"tile rows that share {panels} panels in L2 (grouped tile order)"),
        KnobSpec("SPLIT_K_BELOW", 128, "0..1024", f"{products}split K when the output has fewer tiles than this"),
        KnobSpec("MAX_SPLIT_K", 16, "1..64", f"{products}most K splits per tile"),
        KnobSpec("USE_TMA", 1, "0,1",
                 f"{products}persistent TMA-descriptor kernel for 16-bit operands on Hopper (0: pointers)"),
        KnobSpec("WARP_SPECIALIZE", 0, "0,1",
                 f"{products}warp-specialised loads/MMA in the persistent loop (Triton >= 3.5)"),
        KnobSpec("F32_SPLIT", 0, "0,1", "float32 IEEE tasks as 3 TF32 products (tf32x3) instead of FMA"),
    ]


def _operand(node: Node) -> tuple[str, bool] | None:
    """(input name, transposed) of a matmul operand: ``A`` or ``A.t()``."""
    if node.op == "input":
        return node.name, False
    if node.op == "t" and node.args[0].op == "input":
        return node.args[0].name, True
    if node.op == "transpose" and node.args[0].op == "input" and sorted(node.value) == [-2, -1]:
        return node.args[0].name, True
    return None


def _replace(node: Node, target: Node, by: Node) -> Node:
    if node == target:
        return by
    if not node.args and not node.kw:
        return node
    return Node(node.op, tuple(_replace(a, target, by) for a in node.args),
                tuple((k, _replace(v, target, by)) for k, v in node.kw), node.name, node.value)


@register_template("matmul")
class MatmulTemplate(Template):
    categories = frozenset({"matmul", "matmul_epilogue", "fusion"})
    budget = __doc__

    def match(self, task: Task, model: ReferenceModel) -> Match | None:
        if len(model.outputs) != 1:
            return None
        out = model.outputs[0]
        products = [n for n in set(out.walk()) if n.op in ("matmul", "linear")]
        if len(products) != 1:
            return None
        product = products[0]
        if product.op == "linear" and (product.kwarg("weight") or Node("const")).op == "input":
            # F.linear(x, w) with the weight a forward input (a graph extractor's form): x @ w.T
            bias = product.kwarg("bias")
            if bias is not None and not (bias.op == "const" and bias.value is None):
                return None
            product = Node("matmul", (product.args[0], Node("t", (product.kwarg("weight"),))))
            out = _replace(model.outputs[0], products[0], product)
        if product.op == "linear":
            x = product.args[0]
            weight, bias = product.kwarg("weight"), product.kwarg("bias")
            if x.op != "input" or weight is None or weight.op != "param":
                return None
            a, b = (x.name, False), (weight.name, True)
            layout = "2d"
            epilogue_acc = ACC if bias is None or bias.op == "const" else Node("add", (ACC, bias))
            operands = {x.name}
        else:
            a, b = _operand(product.args[0]), _operand(product.args[1])
            if a is None or b is None:
                return None
            ranks = model.input_ranks.get(a[0]), model.input_ranks.get(b[0])
            if ranks == (2, 2):
                layout = "2d"
            elif ranks[0] is not None and ranks[0] > 2 and ranks[1] == 2 and not a[1]:
                layout = "rows"  # leading dimensions of A flattened into rows (a shared weight)
            elif ranks[0] is not None and ranks[0] > 2 and ranks[0] == ranks[1]:
                layout = "batched"  # one product per leading index (bmm, per-head scores)
            else:
                return None
            epilogue_acc = ACC
            operands = {a[0], b[0]}
        epilogue = _replace(out, product, epilogue_acc)

        def leaf_ok(leaf: Node) -> bool:
            if leaf.op == "param":
                param = model.params.get(leaf.name)
                return param is not None and param.ndim == 1
            return leaf.op == "scalar" or (leaf.op == "input" and (leaf == ACC or leaf.name not in operands))

        if not is_elementwise(epilogue, leaf_ok):
            return None
        others = [n.name for n in epilogue.walk() if n.op == "input" and n != ACC]
        params = [n.name for n in epilogue.walk() if n.op == "param"]
        scalars = [n.name for n in epilogue.walk() if n.op == "scalar"]
        spec = {"a": a, "b": b, "linear": product.op == "linear", "epilogue": epilogue,
                "inputs": list(dict.fromkeys(others)), "params": list(dict.fromkeys(params)),
                "scalars": list(dict.fromkeys(scalars)), "flops": flops_per_element(epilogue),
                "tf32": task.fp32_precision == "tf32", "z": epilogue_acc, "backward": task.backward,
                "layout": layout}
        if layout == "batched" and (spec["inputs"] or spec["params"] or (task.backward and epilogue != ACC)):
            return None  # batched products take no per-element epilogue tensors
        if task.backward and not _differentiable(spec, task):
            return None
        spec["save_z"] = task.backward and epilogue != epilogue_acc
        fused = " with a fused epilogue" if epilogue != ACC else ""
        what = "forward + backward" if task.backward else "forward"
        return Match(self, task, model, spec, summary=f"tiled matmul{fused}, {what}")

    def knobs(self, match: Match) -> list[KnobSpec]:
        return matmul_knobs((128, 256, 64, 8, 3), (128, 128, 32, 8, 3) if match.spec["tf32"] else (64, 64, 32, 4, 3))

    def presets(self, match: Match) -> list[dict[str, int]]:
        return [{"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "NUM_WARPS": 8, "NUM_STAGES": 4,
                 "BLOCK_M_F32": 128, "BLOCK_N_F32": 64, "NUM_STAGES_F32": 4, "F32_SPLIT": 1},
                {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "NUM_WARPS": 4, "NUM_STAGES": 4,
                 "BLOCK_M_F32": 32, "BLOCK_N_F32": 64}]

    def render(self, match: Match, params: dict[str, int]) -> str:
        spec = match.spec
        r = _Render(spec)
        helpers = r.prepare()
        kernels = r.kernels()
        host = r.helpers_host() + r.host()
        body = r.forward_body()
        if spec["backward"]:
            plain = _Render({**spec, "epilogue": ACC, "inputs": [], "params": [], "scalars": [], "save_z": False})
            plain.prepare()
            kernels += _renamed(plain.kernels())
            host += _renamed(plain.host())
            grad = _Backward(spec)
            kernels += grad.dz_kernel()
            helpers |= grad.helpers
            host += grad.host()
            body = grad.forward_body()
        doc = f"Template `matmul` for {match.task.id}: {match.summary}.\n\n" + (__doc__ or "").split("\n\n", 1)[1]
        return assemble(doc, match, params, helper_source(helpers) + kernels, host, body)


def _product_call(spec: dict, fn: str, extra: str) -> str:
    """The forward's product by layout: 2-D operands, rows of a many-dimensional A against a shared B, or a
    batch of products (leading dimensions flattened into one, then restored)."""
    (a, ta), (b, tb) = spec["a"], spec["b"]
    left = f"{a}.transpose(-2, -1)" if ta else a
    right = f"{b}.transpose(-2, -1)" if tb else b
    if spec["layout"] == "rows":
        return (f"rows = {a}.reshape(-1, {a}.shape[-1])\n"
                f"out = {fn}(rows, {right}{extra})\n"
                f"return out.view(*{a}.shape[:-1], out.shape[-1])")
    if spec["layout"] == "batched":
        return (f"left, right = {left}, {right}\n"
                f"if left.shape[:-2] != right.shape[:-2]:\n"
                f"    raise ValueError(f\"batched product of {{tuple(left.shape)}} and {{tuple(right.shape)}}\")\n"
                f"out = {fn}(left.reshape(-1, *left.shape[-2:]), right.reshape(-1, *right.shape[-2:]){extra})\n"
                f"return out.view(*left.shape[:-1], out.shape[-1])")
    return f"return {fn}({left}, {right}{extra})"


Z = Node("input", name="@z")  # the activation's input (the product, plus the bias) in the backward


def _differentiable(spec: dict, task: Task) -> bool:
    """Backward is rendered for products whose epilogue is an activation of A·B (+ the linear's bias)
    with scalar attributes only, and whose differentiated inputs are the operands."""
    bias = [p for p in spec["params"] if p.endswith(".bias")] if spec["linear"] else []
    if spec["inputs"] or set(spec["params"]) - set(bias):
        return False
    operands = {spec["a"][0]} | ({spec["b"][0]} if not spec["linear"] else set())
    if not set(task.grad_inputs) <= operands:
        return False
    tree = _replace(spec["epilogue"], spec["z"], Z)
    if ACC in set(tree.walk()):
        return False
    try:
        TritonExpr(lambda n: "z" if n == Z else f"s_{n.name}").grad(tree, Z)
    except NotElementwise:
        return False
    return True


def _renamed(text: str) -> str:
    """The plain product's kernels and host function under their own names (``_mm``)."""
    for old, new in (("_matmul_batched", "_mm_batched"), ("_matmul_tma_kernel", "_mm_tma_kernel"),
                     ("_matmul_kernel", "_mm_kernel"),
                     ("_split_k_sum_kernel", "_mm_split_k_sum_kernel"), ("def _matmul(", "def _mm(")):
        text = text.replace(old, new)
    return text


class _Backward:
    """dZ = dY * act'(Z) as one elementwise kernel, then dA, dB (and dbias) through ``_mm``."""

    def __init__(self, spec: dict):
        self.spec = spec
        self.act = spec["save_z"]
        self.scalars: list[str] = spec["scalars"]
        self.bias = spec["params"][0] if spec["params"] else None
        self.helpers: set[str] = set()

    def dz_kernel(self) -> str:
        if not self.act:
            return ""
        tree = _replace(self.spec["epilogue"], self.spec["z"], Z)
        expr = TritonExpr(lambda n: "z" if n == Z else f"s_{n.name}")
        grad = expr.grad(tree, Z) or "0.0"
        self.helpers |= expr.helpers
        sargs = "".join(f", s_{s}" for s in self.scalars)
        return f'''

@triton.jit
def _dz_kernel(dy_ptr, z_ptr, dz_ptr, n_elements{sargs}, BLOCK: tl.constexpr):
    # dZ = dY * act'(Z): reads dY and Z once, writes dZ once
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    z = tl.load(z_ptr + offs, mask=mask, other=0.0).to(tl.float32)
{expr.code()}
    tl.store(dz_ptr + offs, (dy * {grad}).to(dz_ptr.dtype.element_ty), mask=mask)
'''

    def host(self) -> str:
        scalars = "".join(f", {s}" for s in self.scalars)
        bias = ", bias" if self.bias else ""
        text = ""
        if self.act:
            text = f'''

def _dz(dy, z{scalars}):
    dy = dy.contiguous()
    dz = torch.empty_like(z)
    n = z.numel()
    if n:
        _dz_kernel[(triton.cdiv(n, 1024),)](dy, z, dz, n{scalars}, BLOCK=1024, num_warps=4)
    return dz
'''
        z_alloc = ('''        if any(ctx.needs_input_grad):
            z = torch.empty((a.shape[0], b.shape[1]), dtype=torch.promote_types(a.dtype, b.dtype), device=a.device)
''' if self.act else "")
        dbias = ('''
        dbias = None
        if ctx.needs_input_grad[2]:  # 1^T dZ: the column sums, through the same split-K kernels
            ones = torch.ones((1, dz.shape[0]), dtype=dz.dtype, device=dz.device)
            dbias = _mm(ones, dz).view(-1)''' if self.bias else "")
        nones = ", None" * len(self.scalars)
        batched = self.spec["layout"] == "batched"
        fn, mm = ("_matmul_batched", "_mm_batched") if batched else ("_matmul", "_mm")
        return text + f'''

class _MatmulFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b{bias}{scalars}):
        z = None
{z_alloc}        y = {fn}(a, b{bias}{scalars}{", z=z" if self.act else ""})
        ctx.save_for_backward(a, b, z)
        ctx.scalars = ({"".join(s + ", " for s in self.scalars)})
        return y

    @staticmethod
    def backward(ctx, dy):
        a, b, z = ctx.saved_tensors
        dz = {"_dz(dy, z, *ctx.scalars)" if self.act else "dy.contiguous()"}
        da = {mm}(dz, b.transpose(-2, -1)) if ctx.needs_input_grad[0] else None
        db = {mm}(a.transpose(-2, -1), dz) if ctx.needs_input_grad[1] else None{dbias}
        return da, db{", dbias" if self.bias else ""}{nones}
'''

    def forward_body(self) -> str:
        (a, _), (b, _) = self.spec["a"], self.spec["b"]
        bias = f", self.{self.bias}" if self.bias else ""
        sargs = "".join(f", float(self.{s})" for s in self.scalars)
        if self.spec["linear"]:
            return (f"rows = {a}.reshape(-1, {a}.shape[-1])\n"
                    f"out = _MatmulFn.apply(rows, self.{b}.t(){bias}{sargs})\n"
                    f"return out.view(*{a}.shape[:-1], out.shape[-1])")
        return _product_call(self.spec, "_MatmulFn.apply", sargs)


class _Render:
    def __init__(self, spec: dict):
        self.spec = spec
        self.inputs: list[str] = spec["inputs"]
        self.params: list[str] = spec["params"]
        self.scalars: list[str] = spec["scalars"]
        self.save_z: bool = spec.get("save_z", False)  # backward through an activation: keep its input
        self._epilogue_code = ""
        self._result = ""
        self._z = ""

    def prepare(self) -> set[str]:
        expr = TritonExpr(self.leaf, indent="    ", prefix="e")
        self._z = expr.value(self.spec["z"]) if self.save_z else ""
        self._result = expr.value(self.spec["epilogue"])
        self._epilogue_code = expr.code()
        return expr.helpers

    @staticmethod
    def leaf(node: Node) -> str:
        if node == ACC:
            return "acc"
        return {"input": "in_", "param": "p_", "scalar": "s_"}[node.op] + node.name.replace(".", "_")

    def epi_ptrs(self) -> str:
        names = [f"in_{n}_ptr" for n in self.inputs] + [f"p_{n.replace('.', '_')}_ptr" for n in self.params]
        names += ["z_ptr"] if self.save_z else []
        return "".join(f", {n}" for n in names)

    def save_sig(self) -> str:
        return ", SAVE_Z: tl.constexpr" if self.save_z else ""

    def epi_scalars(self) -> str:
        return "".join(f", s_{s}" for s in self.scalars)

    def epilogue(self) -> str:
        loads = [f"    in_{n} = tl.load(in_{n}_ptr + offs, mask=cmask, other=0.0).to(tl.float32)" for n in self.inputs]
        loads += [f"    p_{n.replace('.', '_')} = tl.load(p_{n.replace('.', '_')}_ptr + rn, mask=rn < N, "
                  f"other=0.0).to(tl.float32)[None, :]" for n in self.params]
        body = "\n".join(loads + ([self._epilogue_code] if self._epilogue_code.strip() else []))
        save = (f"    if SAVE_Z:\n        tl.store(z_ptr + offs, ({self._z}).to(z_ptr.dtype.element_ty), mask=cmask)\n"
                if self.save_z else "")
        return f'''    offs = rm.to(tl.int64)[:, None] * N + rn[None, :]
{body}
    tl.store(c_ptr + offs, ({self._result}).to(c_ptr.dtype.element_ty), mask=cmask)
{save}'''

    def kernels(self) -> str:
        return f'''
@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, part_ptr{self.epi_ptrs()}, M, N, K, stride_am, stride_ak, stride_bk,
                   stride_bn, k_per_split, stride_ab, stride_bb{self.epi_scalars()}, BLOCK_M: tl.constexpr,
                   BLOCK_N: tl.constexpr,
                   BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, SPLIT: tl.constexpr, PRECISION: tl.constexpr{self.save_sig()}):
    # one BLOCK_M x BLOCK_N output tile over K (or over one K split): 2 * BLOCK_M * BLOCK_N * K FLOPs,
    # reads BLOCK_M * K of A and K * BLOCK_N of B; tiles go in GROUP_M-row groups for L2 reuse
    pid = tl.program_id(0)
    split = tl.program_id(1)
    batch = tl.program_id(2).to(tl.int64)  # batched products: one grid layer per leading index
    a_ptr += batch * stride_ab
    b_ptr += batch * stride_bb
    c_ptr += batch * M * N
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
    k_start = split * k_per_split
    k_end = tl.minimum(k_start + k_per_split, K)
    a_ptrs = a_ptr + rm.to(tl.int64)[:, None] * stride_am + (k_start + rk).to(tl.int64)[None, :] * stride_ak
    b_ptrs = b_ptr + (k_start + rk).to(tl.int64)[:, None] * stride_bk + rn.to(tl.int64)[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(k_start, k_end, BLOCK_K):
        kmask = k0 + rk < k_end
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & kmask[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=kmask[:, None] & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc=acc, input_precision=PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    cmask = (rm[:, None] < M) & (rn[None, :] < N)
    if SPLIT:
        part = part_ptr + tl.cast(split, tl.int64) * M * N + rm.to(tl.int64)[:, None] * N + rn[None, :]
        tl.store(part, acc, mask=cmask)
    else:
{self._indent(self.epilogue())}

@triton.jit
def _split_k_sum_kernel(part_ptr, c_ptr{self.epi_ptrs()}, M, N, n_splits{self.epi_scalars()}, BLOCK_M: tl.constexpr,
                        BLOCK_N: tl.constexpr{self.save_sig()}):
    # sums the fp32 K-split partials of one tile in a fixed order (reads 4 * S * tile bytes), then the epilogue
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = (rm[:, None] < M) & (rn[None, :] < N)
    tile = rm.to(tl.int64)[:, None] * N + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for s in range(0, n_splits):
        acc += tl.load(part_ptr + tl.cast(s, tl.int64) * M * N + tile, mask=cmask, other=0.0)
{self.epilogue()}

@triton.jit
def _matmul_tma_kernel(a_desc, b_desc, c_ptr{self.epi_ptrs()}, M, N, K{self.epi_scalars()}, BLOCK_M: tl.constexpr,
                       BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, A_T: tl.constexpr,
                       B_T: tl.constexpr, NUM_SMS: tl.constexpr, FLATTEN: tl.constexpr,
                       WARP_SPECIALIZE: tl.constexpr{self.save_sig()}):
    # persistent: program p takes output tiles p, p + NUM_SMS, ... in grouped order; A and B tiles come
    # through TMA descriptors (zero-filled past the edges); 2 * BLOCK_M * BLOCK_N * K FLOPs per tile
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    width = GROUP_M * num_pid_n
    for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS, flatten=FLATTEN,
                         warp_specialize=WARP_SPECIALIZE):
        first_m = (tile // width) * GROUP_M
        size_m = tl.minimum(num_pid_m - first_m, GROUP_M)
        pid_m = first_m + (tile % width) % size_m
        pid_n = (tile % width) // size_m
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            off_k = ki * BLOCK_K
            if A_T:
                a = a_desc.load([off_k, off_m]).T
            else:
                a = a_desc.load([off_m, off_k])
            if B_T:
                b = b_desc.load([off_n, off_k]).T
            else:
                b = b_desc.load([off_k, off_n])
            acc = tl.dot(a, b, acc)
        rm = off_m + tl.arange(0, BLOCK_M)
        rn = off_n + tl.arange(0, BLOCK_N)
        cmask = (rm[:, None] < M) & (rn[None, :] < N)
{self._indent(self.epilogue())}'''

    @staticmethod
    def _indent(text: str) -> str:
        return "\n".join(("    " + line) if line.strip() else line for line in text.rstrip("\n").split("\n"))

    @staticmethod
    def helpers_host() -> str:
        """Host helpers every matmul of the file shares (emitted once)."""
        return '''
try:  # host-built TMA descriptors (Triton >= 3.4)
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:
    TensorDescriptor = None

_SM_COUNTS = {}

def _sm_count(device):
    """Programs of the persistent kernel: one per SM (a few under the interpreter)."""
    if device.type != "cuda":
        return 4
    if device.index not in _SM_COUNTS:
        _SM_COUNTS[device.index] = torch.cuda.get_device_properties(device).multi_processor_count
    return _SM_COUNTS[device.index]


def _tma_ok(a, b):
    """Whether both operands can be read through TMA descriptors: 16-bit, one unit stride each, 16-byte
    aligned rows and base; on a GPU of compute capability 9 or newer (the interpreter only when USE_TMA > 1)."""
    if TensorDescriptor is None or not USE_TMA or a.dtype not in (torch.float16, torch.bfloat16) or b.dtype != a.dtype:
        return False
    if a.device.type == "cuda":
        if torch.cuda.get_device_capability(a.device)[0] < 9:
            return False
    elif USE_TMA < 2:
        return False
    for t in (a, b):
        if t.data_ptr() % 16 or min(t.stride()) != 1 or (max(t.stride()) * t.element_size()) % 16:
            return False
    return True


def _tiles(a, M, N, K):
    """Tile sizes, warps and stages for this dtype and shape (small dimensions shrink their tile)."""
    if a.dtype == torch.float32:
        bm, bn, bk, warps, stages = BLOCK_M_F32, BLOCK_N_F32, BLOCK_K_F32, NUM_WARPS_F32, NUM_STAGES_F32
    else:
        bm, bn, bk, warps, stages = BLOCK_M, BLOCK_N, BLOCK_K, NUM_WARPS, NUM_STAGES
    bm = max(16, min(bm, triton.next_power_of_2(M)))
    bn = max(16, min(bn, triton.next_power_of_2(N)))
    bk = max(16, min(bk, triton.next_power_of_2(max(K, 1))))
    return bm, bn, bk, warps, stages
'''

    def host(self) -> str:
        tf32 = self.spec["tf32"]
        tensors = [f"e_{n}" for n in self.inputs] + [f"e_{n.replace('.', '_')}" for n in self.params]
        epi = "".join(f", {t}" for t in tensors)
        zparam = ", z=None" if self.save_z else ""
        zarg = ", c if z is None else z" if self.save_z else ""
        zkw = ", SAVE_Z=z is not None" if self.save_z else ""
        sargs = "".join(f", s_{s}" for s in self.scalars)
        prep = "".join(f"    e_{n} = e_{n}.reshape(M, N).contiguous()\n" for n in self.inputs)
        dtype = "torch.promote_types(a.dtype, b.dtype)"
        for t in tensors:
            dtype = f"torch.promote_types({dtype}, {t}.dtype)"
        return f'''
def _matmul(a, b{epi}{sargs}{zparam}):
    """a (M x K) @ b (K x N), any strides, then the epilogue; fp32 accumulation."""
    M, K = a.shape
    N = b.shape[1]
{prep}    c = torch.empty((M, N), dtype={dtype}, device=a.device)
    if M == 0 or N == 0:
        return c
    precision = ("tf32x3" if F32_SPLIT else "{'tf32' if tf32 else 'ieee'}") if a.dtype == torch.float32 else "tf32"
    bm, bn, bk, warps, stages = _tiles(a, M, N, K)
    tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    splits = 1
    if tiles < SPLIT_K_BELOW and K > 4 * bk:
        splits = max(1, min(MAX_SPLIT_K, SPLIT_K_BELOW // tiles, triton.cdiv(K, 4 * bk)))
    if splits == 1 and _tma_ok(a, b):
        a_t, b_t = a.stride(1) != 1, b.stride(1) != 1
        a_desc = TensorDescriptor.from_tensor(a.t() if a_t else a, [bk, bm] if a_t else [bm, bk])
        b_desc = TensorDescriptor.from_tensor(b.t() if b_t else b, [bn, bk] if b_t else [bk, bn])
        programs = min(_sm_count(a.device), tiles)
        _matmul_tma_kernel[(programs,)](a_desc, b_desc, c{epi}{zarg}, M, N, K{sargs}, BLOCK_M=bm, BLOCK_N=bn,
                                        BLOCK_K=bk, GROUP_M=GROUP_M, A_T=a_t, B_T=b_t, NUM_SMS=programs,
                                        FLATTEN=not WARP_SPECIALIZE, WARP_SPECIALIZE=bool(WARP_SPECIALIZE),
                                        num_warps=warps, num_stages=stages{zkw})
        return c
    k_per_split = triton.cdiv(triton.cdiv(max(K, 1), splits), bk) * bk
    splits = triton.cdiv(max(K, 1), k_per_split)
    part = torch.empty((splits, M, N) if splits > 1 else (1,), dtype=torch.float32, device=a.device)
    _matmul_kernel[(tiles, splits, 1)](a, b, c, part{epi}{zarg}, M, N, K, a.stride(0), a.stride(1), b.stride(0),
                                       b.stride(1), k_per_split, 0, 0{sargs}, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                    GROUP_M=GROUP_M, SPLIT=splits > 1, PRECISION=precision, num_warps=warps,
                                    num_stages=stages{zkw})
    if splits > 1:
        _split_k_sum_kernel[(triton.cdiv(M, 64), triton.cdiv(N, 64))](part, c{epi}{zarg}, M, N, splits{sargs},
                                                                      BLOCK_M=64, BLOCK_N=64, num_warps=4{zkw})
    return c


def _matmul_batched(a, b{sargs}):
    """a (B x M x K) @ b (B x K x N), any strides, one grid layer per batch index (no split-K)."""
    batch, M, K = a.shape
    N = b.shape[2]
    c = torch.empty((batch, M, N), dtype=torch.promote_types(a.dtype, b.dtype), device=a.device)
    if c.numel() == 0:
        return c
    precision = ("tf32x3" if F32_SPLIT else "{'tf32' if tf32 else 'ieee'}") if a.dtype == torch.float32 else "tf32"
    bm, bn, bk, warps, stages = _tiles(a, M, N, K)
    tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    part = torch.empty((1,), dtype=torch.float32, device=a.device)
    _matmul_kernel[(tiles, 1, batch)](a, b, c, part, M, N, K, a.stride(1), a.stride(2), b.stride(1), b.stride(2),
                                      max(K, 1), a.stride(0), b.stride(0){sargs}, BLOCK_M=bm, BLOCK_N=bn,
                                      BLOCK_K=bk, GROUP_M=GROUP_M, SPLIT=False, PRECISION=precision,
                                      num_warps=warps, num_stages=stages)
    return c
'''

    def forward_body(self) -> str:
        (a, _), (b, _) = self.spec["a"], self.spec["b"]
        epi = "".join(f", {n}" for n in self.inputs) + "".join(f", self.{n}" for n in self.params)
        sargs = "".join(f", float(self.{s})" for s in self.scalars)
        if self.spec["linear"]:
            return (f"rows = {a}.reshape(-1, {a}.shape[-1])\n"
                    f"out = _matmul(rows, self.{b}.t(){epi}{sargs})\n"
                    f"return out.view(*{a}.shape[:-1], out.shape[-1])")
        fn = "_matmul_batched" if self.spec["layout"] == "batched" else "_matmul"
        return _product_call(self.spec, fn, epi + sargs)
