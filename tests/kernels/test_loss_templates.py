"""The loss, residual-norm and embedding templates: which suite tasks they serve, and that each
instantiation passes the verifier's correctness stages (forward and backward) under the Triton
interpreter on the tasks' small configs, through the same ``EvalSession`` the search agent screens with."""

from __future__ import annotations

import ast

import pytest

from kernellab.kernels import match_templates
from kernellab.kernels.reference_model import float32_upcast_calls, read_model
from kernellab.tasks.load import load_task
from test_kernel_templates import passes, render

SERVED = [
    ("losses/cross_entropy", "cross_entropy"),
    ("losses/cross_entropy_none", "cross_entropy"),
    ("losses/cross_entropy_ignore_index", "cross_entropy"),
    ("losses/cross_entropy_label_smoothing", "cross_entropy"),
    ("losses/cross_entropy_2d", "cross_entropy"),
    ("losses/fused_linear_cross_entropy", "linear_cross_entropy"),
    ("fusion/linear_cross_entropy", "linear_cross_entropy"),
    ("normalization/add_rmsnorm", "norm"),
    ("normalization/add_layernorm", "norm"),
    ("indexing/embedding", "embedding"),
]

# Parameters that send the templates down their split-row and multi-chunk paths on the small configs.
SPLIT = [
    ("normalization/add_layernorm", "norm", {"MAX_SINGLE": 32, "CHUNK": 32, "TILE": 64, "BLOCK_N": 32,
                                             "ROW_GROUPS": 3}),
    ("normalization/add_rmsnorm", "norm", {"MAX_SINGLE": 32, "CHUNK": 32, "TILE": 64, "BLOCK_N": 32}),
    ("losses/cross_entropy", "cross_entropy", {"CHUNK": 16, "TILE": 16, "MIN_SEGMENT": 32, "GRAD_TILE": 32}),
    ("losses/cross_entropy_label_smoothing", "cross_entropy", {"CHUNK": 16, "TILE": 32, "MIN_SEGMENT": 16,
                                                               "TARGET_PROGRAMS": 64}),
    ("losses/cross_entropy_none", "cross_entropy", {"CHUNK": 32, "MIN_SEGMENT": 32, "GRAD_TILE": 16}),
    ("losses/fused_linear_cross_entropy", "linear_cross_entropy", {"CHUNK_TOKENS": 3, "CE_CHUNK": 32, "BLOCK_M": 16,
                                                                   "BLOCK_N": 16, "BLOCK_K": 16, "BLOCK_M_F32": 16,
                                                                   "BLOCK_N_F32": 16, "BLOCK_K_F32": 16}),
]


@pytest.mark.parametrize(("task_id", "template"), SERVED, ids=[t for t, _ in SERVED])
def test_each_served_task_passes_the_correctness_stages(task_id, template, tmp_path):
    source = render(task_id, template)
    ast.parse(source)
    passes(task_id, source, tmp_path)


@pytest.mark.parametrize(("task_id", "template", "params"), SPLIT, ids=[f"{t}:{sorted(p)}" for t, _, p in SPLIT])
def test_split_and_chunked_paths_pass_too(task_id, template, params, tmp_path):
    passes(task_id, render(task_id, template, params), tmp_path)
