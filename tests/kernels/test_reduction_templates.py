"""Whole-tensor, column and row-statistic reductions, and the pointwise losses read as them: every
served task passes the verifier's correctness stages (forward and backward) under the Triton
interpreter on its small configs, through the same ``EvalSession`` the search agent screens with, at
the defaults and with small knob values that send each template down its multi-program, split and
looped paths; and the reader reads the losses and statistics as the chains and reductions they are."""

from __future__ import annotations

import pytest

from kernellab.kernels import match_templates
from kernellab.kernels.reference_model import read_model
from kernellab.tasks.load import load_task

# Which suite tasks these templates implement (``test_kernel_templates.EXPECTED`` includes this).
SERVED = {
    "full_reduction": {"reductions/sum_all", "losses/mse_loss", "losses/l1_loss", "losses/huber_loss",
                       "losses/smooth_l1_loss", "losses/bce_with_logits", "losses/sigmoid_focal_loss"},
    "row_epilogue": {"softmax/softmax_backward", "normalization/l2_normalize"},
    "scan": {"reductions/cumsum_rows", "reductions/cumprod_rows", "reductions/logcumsumexp_rows"},
    "col_reduction": {"reductions/sum_cols", "reductions/min_cols", "reductions/std_cols", "reductions/argmax_cols"},
}
ROW_REDUCTIONS = {"reductions/absmax_rows", "reductions/max_rows", "reductions/mean_rows", "reductions/sum_rows",
                  "reductions/var_rows", "reductions/l2_norm_rows", "reductions/count_positive",
                  "reductions/argmax_rows"}

# Small knob values: several programs and a second (finishing) pass on the small configs.
PATHS = [
    ("losses/mse_loss", "full_reduction", {"BLOCK": 16, "MAX_PROGRAMS": 4}),
    ("losses/bce_with_logits", "full_reduction", {"BLOCK": 32, "MAX_PROGRAMS": 64}),
    ("reductions/sum_all", "full_reduction", {"BLOCK": 16, "MAX_PROGRAMS": 3}),
    # split rows (partials merged by a second kernel) and several chunks per row
    ("reductions/var_rows", "row_reduction", {"CHUNK": 16, "MIN_SEGMENT": 16, "TARGET_PROGRAMS": 64}),
    ("reductions/var_rows", "row_reduction", {"CHUNK": 16, "TILE": 32}),
    ("reductions/argmax_rows", "row_reduction", {"CHUNK": 16, "MIN_SEGMENT": 32, "TARGET_PROGRAMS": 64}),
    ("reductions/argmax_rows", "row_reduction", {"CHUNK": 16, "TILE": 16}),
    ("reductions/l2_norm_rows", "row_reduction", {"CHUNK": 16, "MIN_SEGMENT": 16, "TARGET_PROGRAMS": 64}),
    ("reductions/count_positive", "row_reduction", {"CHUNK": 16, "MIN_SEGMENT": 32, "TARGET_PROGRAMS": 64}),
    # rows split into segments whose partials a second kernel merges; several row steps per segment
    ("reductions/std_cols", "col_reduction", {"BLOCK_C": 16, "TILE": 16, "MIN_SEGMENT": 2, "TARGET_PROGRAMS": 64}),
    ("reductions/argmax_cols", "col_reduction", {"BLOCK_C": 16, "TILE": 16, "MIN_SEGMENT": 2,
                                                 "TARGET_PROGRAMS": 64}),
    ("reductions/min_cols", "col_reduction", {"BLOCK_C": 32, "TILE": 32, "MIN_SEGMENT": 1, "TARGET_PROGRAMS": 16}),
    ("reductions/sum_cols", "col_reduction", {"TARGET_PROGRAMS": 1}),  # one segment, no second kernel
    # several chunks per row (the carry between them), and split rows (segment totals, then the scan)
    ("reductions/cumsum_rows", "scan", {"CHUNK": 16, "TILE": 32}),
    ("reductions/cumsum_rows", "scan", {"CHUNK": 16, "MIN_SEGMENT": 32, "TARGET_PROGRAMS": 64}),
    ("reductions/cumprod_rows", "scan", {"CHUNK": 16, "MIN_SEGMENT": 16, "TARGET_PROGRAMS": 64}),
    ("reductions/logcumsumexp_rows", "scan", {"CHUNK": 16, "MIN_SEGMENT": 32, "TARGET_PROGRAMS": 64}),
    # rows longer than MAX_SINGLE: statistics and output (and the backward's two passes) over CHUNK pieces
    ("normalization/l2_normalize", "row_epilogue", {"MAX_SINGLE": 32, "CHUNK": 16}),
    ("softmax/softmax_backward", "row_epilogue", {"MAX_SINGLE": 16, "CHUNK": 32}),
    ("normalization/l2_normalize", "row_epilogue", {"TILE": 64, "ELEMS_PER_WARP": 64}),
]


@pytest.mark.parametrize(("task_id", "template", "params"), PATHS, ids=[f"{t}:{sorted(p)}" for t, _, p in PATHS])
def test_multi_program_split_and_looped_paths_pass(task_id, template, params, tmp_path):
    from test_kernel_templates import passes, render
    passes(task_id, render(task_id, template, params), tmp_path)


def _model(forward: str, init: str = "pass"):
    return read_model(f'''
import torch
import torch.nn as nn
import torch.nn.functional as F
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        {init}
    def forward(self, a, b):
        return {forward}
''')


def test_pointwise_losses_read_as_a_chain_and_its_reduction():
    (out,) = _model("F.mse_loss(a, b)").outputs
    assert out.op == "mean" and out.args[0].op == "square" and out.args[0].args[0].op == "sub"
    (out,) = _model("F.l1_loss(a, b, reduction='sum')").outputs
    assert out.op == "sum" and out.args[0].op == "abs"
    (out,) = _model("F.smooth_l1_loss(a, b, reduction='none', beta=0.5)").outputs
    assert out.op == "div"  # huber(delta=beta) / beta, per element
    (out,) = _model("F.binary_cross_entropy_with_logits(a, b)").outputs
    assert out.op == "mean" and out.args[0].op == "add"
    # weighted forms are not read (no template would honour the weight)
    assert _model("F.binary_cross_entropy_with_logits(a, b, pos_weight=b)").outputs is None
    assert _model("F.mse_loss(a, b, reduction='batchmean')").outputs is None


def test_statistics_read_with_their_keywords():
    (out,) = _model("torch.var(a, dim=-1, correction=0)").outputs
    assert out.op == "var" and out.const("correction") == 0 and out.const("dim") == -1
    (out,) = _model("a.std(0, keepdim=True)").outputs
    assert out.op == "std" and out.const("correction") == 1 and out.const("keepdim") is True
    (out,) = _model("torch.linalg.vector_norm(a, dim=-1)").outputs
    assert out.op == "sqrt" and out.args[0].op == "sum" and out.args[0].args[0].op == "square"
    (out,) = _model("(a > 0).sum(-1)").outputs
    assert out.op == "sum" and out.args[0].op == "gt"
    assert _model("torch.argmax(a)").outputs is None  # over every element: not read
    (out,) = _model("F.normalize(a, dim=-1)").outputs
    assert out.op == "div" and out.args[1].op == "clamp" and out.args[1].const("min") == 1e-12
    assert _model("F.normalize(a, p=1.0, dim=-1)").outputs is None  # the 1-norm is not read


def test_served_tasks_match_only_these_templates():
    for name, tasks in SERVED.items():
        for task_id in tasks:
            assert [m.template.name for m in match_templates(load_task(task_id))] == [name], task_id


def test_comparisons_are_numbers_only_beside_numbers():
    # a comparison as a where condition, or in arithmetic beside a number-valued operand: elementwise
    (out,) = _model("torch.where(a > 0, a, b * 2)").outputs
    assert out.op == "where" and out.args[0].op == "gt"
    (out,) = _model("a.masked_fill(b > 0, 0.0)").outputs
    assert out.op == "where" and out.args[1].op == "const" and out.args[2].name == "a"
    (out,) = _model("b.where(a > 0, a)").outputs  # the method form: the receiver is the first branch
    assert out.args[1].name == "b" and out.args[2].name == "a"
    from kernellab.kernels.triton_expr import is_elementwise
    ok = lambda leaf: True  # noqa: E731
    assert is_elementwise(_model("a * (a > 0)").outputs[0], ok)
    # a boolean result, or arithmetic of booleans alone, would have PyTorch's bool dtype: not elementwise
    assert not is_elementwise(_model("a > b").outputs[0], ok)
    assert not is_elementwise(_model("(a > 0) * (b > 0)").outputs[0], ok)


@pytest.mark.parametrize(("task_id", "template"), [("losses/huber_loss", "full_reduction"),
                                                   ("reductions/std_cols", "col_reduction"),
                                                   ("reductions/cumsum_rows", "scan"),
                                                   ("reductions/argmax_rows", "row_reduction"),
                                                   ("optimizer/adamw", "inplace_update"),
                                                   ("indexing/where", "elementwise"),
                                                   ("normalization/l2_normalize", "row_epilogue")])
def test_the_search_agent_proposes_the_template_screened_by_its_own_session(task_id, template, tmp_path):
    from test_kernel_templates import passes

    from kernellab.agents.base import ProposalRequest, create_agent
    from kernellab.agents.workspace import build_workspace

    workspace = build_workspace(load_task(task_id), tmp_path / "ws").path
    agent = create_agent("search", max_screen=2)
    try:
        proposal = agent.propose(ProposalRequest(workspace=workspace, task_id=task_id, iteration=0,
                                                 parent=(workspace / "kernel.py").read_text(), deadline_s=600.0))
    finally:
        agent.close()
    assert proposal.source and proposal.note.startswith(f"template {template}"), proposal.note
    assert "unscreened" not in proposal.note
    passes(task_id, proposal.source, tmp_path)


def test_rendered_knobs_are_what_the_tuner_finds():
    from kernellab.agents.search.params import find_knobs

    for task_id, name in [("losses/mse_loss", "full_reduction"), ("reductions/std_cols", "col_reduction"),
                          ("reductions/cumsum_rows", "scan"), ("reductions/var_rows", "row_reduction"),
                          ("optimizer/adam", "inplace_update"), ("softmax/softmax_backward", "row_epilogue")]:
        match = next(m for m in match_templates(load_task(task_id)) if m.template.name == name)
        declared = {k.name: k for k in match.template.knobs(match)}
        found = {k.name: k for k in find_knobs(match.render()) if k.kind == "constant"}
        assert set(found) == set(declared), name
        for knob, spec in declared.items():
            assert found[knob].value == spec.default and len(found[knob].domain) > 1, (name, knob)


def test_a_zero_rows_norm_has_gradient_zero_as_in_pytorch(tmp_path):
    import os
    import subprocess
    import sys

    match = match_templates(load_task("reductions/l2_norm_rows"))[0]
    (tmp_path / "candidate.py").write_text(match.render())
    script = '''
import importlib.util, sys, torch
spec = importlib.util.spec_from_file_location("candidate", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
x = torch.randn(3, 40)
x[1] = 0.0
a, b = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
mod.ModelNew()(a).backward(torch.ones(3))
torch.linalg.vector_norm(b, dim=-1).backward(torch.ones(3))
print(float((a.grad - b.grad).abs().max()), bool(torch.isfinite(a.grad).all()))
'''
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "candidate.py")], capture_output=True,
                         text=True, check=True, timeout=300, env=env).stdout.split()
    assert float(out[0]) < 1e-6 and out[1] == "True"
