"""The loss, residual-norm and embedding templates beyond their defaults (which
``test_kernel_templates.py`` checks on every task they serve): the split-row and chunked paths pass the
verifier's correctness stages (forward and backward) under the Triton interpreter on the tasks' small
configs, through the same ``EvalSession`` the search agent screens with; and the reader sees the
shapes of references a model-graph extractor writes."""

from __future__ import annotations

import pytest
import torch
from test_kernel_templates import passes, render

from kernellab.agents.base import ProposalRequest, create_agent
from kernellab.agents.workspace import build_workspace
from kernellab.kernels import match_templates
from kernellab.kernels.reference_model import float32_upcast_calls, read_model
from kernellab.tasks.load import load_task

# Parameters that send the templates down their split-row and multi-chunk paths on the small configs.
SPLIT = [
    ("reductions/sum_rows", "row_reduction", {"CHUNK": 16, "MIN_SEGMENT": 16, "TARGET_PROGRAMS": 64}),
    ("reductions/absmax_rows", "row_reduction", {"CHUNK": 16, "TILE": 16, "MIN_SEGMENT": 32, "TARGET_PROGRAMS": 64}),
    ("reductions/mean_rows", "row_reduction", {"CHUNK": 32, "MIN_SEGMENT": 16, "TARGET_PROGRAMS": 64}),
    ("normalization/layernorm", "norm", {"MAX_SINGLE": 32, "CHUNK": 16, "MIN_SEGMENT": 16, "TARGET_PROGRAMS": 64}),
    ("normalization/rmsnorm", "norm", {"MAX_SINGLE": 32, "CHUNK": 16, "MIN_SEGMENT": 32, "TARGET_PROGRAMS": 64}),
    ("normalization/add_layernorm", "norm", {"MAX_SINGLE": 32, "CHUNK": 16, "MIN_SEGMENT": 16,
                                             "TARGET_PROGRAMS": 64}),
    ("normalization/add_rmsnorm_hf", "norm", {"MAX_SINGLE": 32, "CHUNK": 16, "MIN_SEGMENT": 16,
                                              "TARGET_PROGRAMS": 64}),
    ("normalization/add_layernorm", "norm", {"MAX_SINGLE": 32, "CHUNK": 32, "TILE": 64, "BLOCK_N": 32,
                                             "ROW_GROUPS": 3}),
    ("normalization/add_rmsnorm", "norm", {"MAX_SINGLE": 32, "CHUNK": 32, "TILE": 64, "BLOCK_N": 32}),
    ("losses/cross_entropy", "cross_entropy", {"CHUNK": 16, "TILE": 16, "MIN_SEGMENT": 32, "GRAD_TILE": 32}),
    ("losses/cross_entropy_label_smoothing", "cross_entropy", {"CHUNK": 16, "TILE": 32, "MIN_SEGMENT": 16,
                                                               "TARGET_PROGRAMS": 64}),
    ("losses/cross_entropy_none", "cross_entropy", {"CHUNK": 32, "MIN_SEGMENT": 32, "GRAD_TILE": 16}),
    ("losses/cross_entropy", "cross_entropy", {"TARGET_PROGRAMS": 1, "FUSED_CHUNK": 32}),  # the fused gradient
    ("losses/cross_entropy_label_smoothing", "cross_entropy", {"TARGET_PROGRAMS": 1}),
    ("losses/cross_entropy_ignore_index", "cross_entropy", {"TARGET_PROGRAMS": 1, "FUSED_CHUNK": 16}),
    ("losses/fused_linear_cross_entropy", "linear_cross_entropy", {"CHUNK_TOKENS": 3, "CE_CHUNK": 32, "BLOCK_M": 16,
                                                                   "BLOCK_N": 16, "BLOCK_K": 16, "BLOCK_M_F32": 16,
                                                                   "BLOCK_N_F32": 16, "BLOCK_K_F32": 16}),
]


@pytest.mark.parametrize(("task_id", "template", "params"), SPLIT, ids=[f"{t}:{sorted(p)}" for t, _, p in SPLIT])
def test_split_and_chunked_paths_pass_too(task_id, template, params, tmp_path):
    passes(task_id, render(task_id, template, params), tmp_path)


def test_an_extracted_loss_reads_through_views_and_the_float32_upcast():
    # the graph extractor's form: rows of [B, S, V] logits, cast up, labels flattened
    task = load_task("losses/cross_entropy_causal_lm")
    (match,) = match_templates(task)
    assert match.template.name == "cross_entropy"
    assert match.spec["logits"] == "logits" and match.spec["targets"] == "labels" and match.spec["upcast"] is True
    assert "torch.promote_types(logits.dtype, torch.float32)" in match.render()
    # without the cast the loss keeps the logits' dtype
    plain = load_task("losses/cross_entropy")
    assert match_templates(plain)[0].spec["upcast"] is False


def test_upcasts_are_read_through_local_names_and_promote_types():
    source = '''
import torch
import torch.nn as nn
import torch.nn.functional as F
class Model(nn.Module):
    def __init__(self, h, v):
        super().__init__()
        self.lm_head = nn.Linear(h, v, bias=False)
    def forward(self, x, t):
        logits = self.lm_head(x).to(torch.promote_types(x.dtype, torch.float32))
        return F.cross_entropy(logits, t, ignore_index=-100)
'''
    assert float32_upcast_calls(source, "cross_entropy")
    assert not float32_upcast_calls(source.replace(".to(torch.promote_types(x.dtype, torch.float32))", ""),
                                    "cross_entropy")
    (out,) = read_model(source).outputs
    assert out.op == "cross_entropy" and out.args[0].op == "linear" and out.const("ignore_index") == -100


def test_a_hugging_face_residual_rmsnorm_is_served_with_both_outputs():
    (match,) = match_templates(load_task("normalization/add_rmsnorm_hf"))
    assert match.template.name == "norm"
    assert (match.spec["x"], match.spec["residual"], match.spec["sum_at"]) == ("hidden_states", "residual", 1)


def test_a_residual_norm_whose_second_output_is_not_the_sum_is_not_served():
    source = load_task("normalization/add_rmsnorm").source.replace("return s * rms * self.weight, s",
                                                                   "return s * rms * self.weight, x")
    assert [m.template.name for m in match_templates(load_task("normalization/add_rmsnorm"), source)] == []


def test_embedding_submodules_and_padding_are_read():
    source = '''
import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self, v, d):
        super().__init__()
        self.tok = nn.Embedding(v, d, padding_idx=0)
    def forward(self, ids):
        return self.tok(ids)
'''
    (out,) = read_model(source).outputs
    assert out.op == "embedding" and out.args[1].name == "tok.weight" and out.const("padding_idx") == 0
    (match,) = match_templates(load_task("indexing/embedding"), source)
    assert match.spec["padding_idx"] == 0 and "_Embedding.apply(ids, self.tok.weight, 0)" in match.render()


@pytest.mark.parametrize(("task_id", "template"), [("losses/cross_entropy_ignore_index", "cross_entropy"),
                                                   ("normalization/add_layernorm", "norm"),
                                                   ("fusion/linear_cross_entropy", "linear_cross_entropy")])
def test_the_search_agent_proposes_the_template_screened_correct(task_id, template, tmp_path):
    # the real agent: its pool matches the template, its own EvalSession screens it (backward included)
    task = load_task(task_id)
    workspace = build_workspace(task, tmp_path / "ws").path
    agent = create_agent("search", max_screen=3)  # a variant screened wrong is skipped, as in a real search
    parent = (workspace / "kernel.py").read_text()
    try:
        proposal = agent.propose(ProposalRequest(workspace=workspace, task_id=task.id, iteration=0, parent=parent,
                                                 deadline_s=400))
    finally:
        agent.close()
    assert proposal.source and proposal.note.startswith(f"template {template}"), proposal.note
    assert " screened, " in proposal.note and proposal.source is not None


def test_nll_loss_of_log_softmax_is_served_as_cross_entropy(tmp_path):
    # the decomposition a graph gives (log_softmax, then nll_loss), checked against F.cross_entropy
    task = load_task("losses/cross_entropy_ignore_index")
    source = task.source.replace("F.cross_entropy(logits, targets, ignore_index=-100)",
                                 "F.nll_loss(F.log_softmax(logits.float(), dim=-1), targets, ignore_index=-100)")
    assert source != task.source
    (match,) = match_templates(task, source)
    assert match.spec["nll"] is False and match.spec["upcast"] is True
    plain = match_templates(task, source.replace("logits.float()", "logits"))[0]
    assert plain.spec["upcast"] is False
    passes(task.id, plain.render(), tmp_path)


def test_nll_loss_of_log_probabilities_is_a_gather(tmp_path):
    (match,) = match_templates(load_task("losses/nll_loss"))
    assert match.spec["nll"] is True and "negative log-likelihood" in match.summary
    passes("losses/nll_loss", match.render(), tmp_path)


GPU_TASKS = [("losses/cross_entropy", "cross_entropy"), ("losses/cross_entropy_causal_lm", "cross_entropy"),
             ("losses/cross_entropy_2d", "cross_entropy"), ("losses/nll_loss", "cross_entropy"),
             ("fusion/linear_cross_entropy", "linear_cross_entropy"), ("normalization/add_rmsnorm_hf", "norm"),
             ("normalization/add_layernorm", "norm"), ("normalization/qk_norm", "norm"),
             ("indexing/embedding", "embedding")]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize(("task_id", "template"), GPU_TASKS, ids=[t for t, _ in GPU_TASKS])
def test_on_a_gpu_every_dtype_and_seen_config_passes(task_id, template, tmp_path):
    # bfloat16 and the compiled kernels are checked only here: the interpreter does not emulate bfloat16
    passes(task_id, render(task_id, template), tmp_path)
