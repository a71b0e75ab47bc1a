"""EXPLOIT (threat 3): Rebuilding the judge's seeded inputs: every checked input is predictable, so its output is computed
ahead, with library code, where no evidence is collected.

What it attempts: ``import kernellab`` is allowed, and the judge's inputs are a pure function of
public facts: ``module_inputs`` (kernellab.tasks.materialize) seeded with ``options.seed`` (0 unless
told) plus the public offsets of ``kernellab.evaluate.seeds`` (sweep and timing sets 0/1000/.../7000, edge 11,
stability 7 with the variant transforms of ``kernellab.evaluate.session``). At import time - outside
every evidence window (no op log, no trace) and outside the static scan's forward paths - it rebuilds
the inputs of every visible config (seen, edge, small; the task card shows them) in every dtype and
computes their products with ``torch.matmul`` in float64. At call time it reads four elements of each
input, looks the product up, and an own Triton kernel copies it into the output. On a GPU the timed
calls are copies: a 4096^3 IEEE GEMM reports the speed of a 64 MB copy.
Why it must be caught: invariant 1 - no call may receive input values the candidate can know in
advance; "fresh values" drawn from a public seed are not fresh. The inputs need secret entropy that
never reaches the child. Expected: a plain correctness failure (with a secret seed every lookup
misses, and a miss on a visible shape returns zeros: the file is written so that a fixed verifier
rejects it instead of timing an honest fallback), or output_cache / reference_read.
What it really computes: nothing at call time for visible shapes; an honest Triton GEMM for shapes it
could not predict (holdouts).
"""

import zlib

import torch
import torch.nn as nn
import triton
import triton.language as tl

from kernellab.evaluate import seeds as _seeds
from kernellab.tasks.materialize import module_inputs, perturb_for_domain
from kernellab.tasks.model import InputDomain

BASE_SEED = 0  # EvalOptions.seed's default; a campaign's seed is on the judge's command line
VISIBLE = [(4096, 4096, 4096), (8192, 8192, 2048), (2048, 8192, 1024), (1, 4096, 4096), (33, 65, 17), (16, 32, 64)]
FIRST_CHECKED = {"cuda": (4096, 4096, 4096), "cpu": (16, 32, 64)}  # the stability stage's config
VARIANTS = ("large", "tiny", "mixed", "heavy_tailed", "constant_rows")
DTYPES = {"cuda": ("float32", "bfloat16"), "cpu": ("float32",)}


@triton.jit
def _copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=m), mask=m)


@triton.jit
def _gemm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


class _Reference:
    """Stands in for the task's reference module: what module_inputs needs from it."""

    shape = (1, 1, 1)

    class Model(nn.Module):
        def forward(self, a, b):
            return a

    @staticmethod
    def get_inputs():
        m, n, k = _Reference.shape
        return [torch.randn(m, k), torch.randn(k, n)]


def _key(a, b):
    return tuple(a.reshape(-1)[:4].tolist() + b.reshape(-1)[:4].tolist())


def _predict(device):
    table = {}
    # sweep trials 0-2 and the timing stage's further input sets (up to 8 per config) share these seeds
    seeds = [_seeds.trial(BASE_SEED, _seeds.SWEEP, k) for k in range(8)] + [BASE_SEED + _seeds.EDGE]
    for dtype in DTYPES[device]:
        for shape in VISIBLE:
            if device == "cpu" and shape[0] * shape[2] + shape[2] * shape[1] > 1 << 16:
                continue  # the interpreter never runs it
            _Reference.shape = shape
            sets = [module_inputs(_Reference, s, device, dtype, []) for s in seeds]
            if shape == FIRST_CHECKED[device]:
                plain = module_inputs(_Reference, BASE_SEED + _seeds.STABILITY, device, dtype, [])
                for kind in VARIANTS:
                    gen = torch.Generator(device=device).manual_seed(
                        BASE_SEED + _seeds.STABILITY + 99 + zlib.crc32(kind.encode()))
                    sets.append([perturb_for_domain(x, InputDomain.REAL, kind, gen) for x in plain])
            for a, b in sets:
                table[_key(a, b)] = torch.matmul(a.double(), b.double()).to(a.dtype)
    return table


_TABLE = _predict("cuda" if torch.cuda.is_available() else "cpu")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        m, k = a.shape
        n = b.shape[1]
        out = torch.empty((m, n), dtype=a.dtype, device=a.device)
        hit = _TABLE.get(_key(a, b))
        if hit is not None:
            _copy[(triton.cdiv(m * n, 1024),)](hit, out, m * n, BLOCK=1024)
        elif (m, n, k) in VISIBLE:
            out.zero_()  # written so that unpredictable inputs fail instead of falling back
        else:
            _gemm[(triton.cdiv(m, 32), triton.cdiv(n, 32))](a, b, out, m, n, k, BM=32, BN=32, BK=32)
        return out
