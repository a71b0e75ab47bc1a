"""What the row-wise templates (softmax, row reductions, norms) share: reading "over the last
dimension" from a reference tree, a pre-op chain on the input, and the host code that views the
input as ``[rows, cols]`` and sizes the tiles.

Row kernels come in two shapes. *Single-pass*: a ``[BLOCK_R, BLOCK_C]`` tile holds whole rows in
registers (``BLOCK_C = next_pow2(cols) <= MAX_SINGLE``), so each element is read once and written
once. *Looped*: one program per row (or row segment) walks the row in ``CHUNK``-wide pieces, reading
it once per pass.
"""

from __future__ import annotations

from kernellab.kernels.reference_model import Node, ReferenceModel
from kernellab.kernels.template import KnobSpec
from kernellab.kernels.triton_expr import is_elementwise

SINGLE_KNOBS = [
    KnobSpec("MAX_SINGLE", 8192, "1024..32768", "longest row (next power of two) held in registers in one pass"),
    KnobSpec("TILE", 4096, "512..16384", "elements per program of the single-pass kernels (short rows share one)"),
    KnobSpec("ELEMS_PER_WARP", 512, "64..2048", "single-pass warps = tile elements / this (1 to 16)"),
]
LOOP_KNOBS = [
    KnobSpec("CHUNK", 4096, "512..16384", "columns per step of the looped kernels (rows beyond MAX_SINGLE)"),
    KnobSpec("LOOP_WARPS", 8, "1,2,4,8,16", "warps of the looped kernels"),
]

TILE_HOST = '''
def _tile(n_rows, n_cols):
    """Rows per program, columns per program and warps of a single-pass tile."""
    block_c = max(16, triton.next_power_of_2(n_cols))
    block_r = max(1, min(TILE // block_c, triton.next_power_of_2(n_rows)))
    warps = max(1, min(16, block_r * block_c // ELEMS_PER_WARP))
    return block_r, block_c, warps
'''

ROWS_HOST = '''
def _rows(x):
    """x as a contiguous [rows, cols] view over its last dimension."""
    n_cols = x.shape[-1] if x.dim() else 1
    x2 = x.contiguous().view(-1, n_cols) if n_cols else x.contiguous().view(x.numel(), 0)
    return x2, x2.shape[0], n_cols
'''


def last_dim(node: Node, model: ReferenceModel, x: str) -> bool:
    """Whether a reduction node's ``dim`` names the last dimension of input ``x``."""
    dim = node.const("dim", None)
    if isinstance(dim, (tuple, list)) and len(dim) == 1:
        dim = dim[0]
    if dim == -1:
        return True
    rank = model.input_ranks.get(x)
    return isinstance(dim, int) and rank is not None and dim == rank - 1


def single_input_chain(node: Node, model: ReferenceModel) -> str | None:
    """The input name when ``node`` is an elementwise chain over exactly one input (and scalars)."""
    inputs = {n.name for n in node.walk() if n.op == "input"}
    if len(inputs) != 1 or not is_elementwise(node, lambda leaf: leaf.op in ("input", "scalar")):
        return None
    return inputs.pop()


def scalars_of(node: Node) -> list[str]:
    names: list[str] = []
    for n in node.walk():
        if n.op == "scalar" and n.name not in names:
            names.append(n.name)
    return names


def chain_leaf(node: Node) -> str:
    """Kernel names of a chain's leaves: the loaded input is ``x``, scalars are ``s_<name>``."""
    return "x" if node.op == "input" else f"s_{node.name}"
