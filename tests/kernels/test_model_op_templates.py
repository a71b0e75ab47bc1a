"""The templates for the ops a transformer's forward and training step spend time in (gated activations,
RoPE, attention, matmul with backward): which suite tasks each one serves, and that each instantiation
passes the verifier's correctness stages (backward included where the task asks) under the Triton
interpreter on the tasks' small configs, through the same EvalSession the search agent screens with."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kernellab.evaluate.options import EvalOptions, with_stages
from kernellab.evaluate.session import EvalSession
from kernellab.evaluate.verdict import Stage
from kernellab.kernels import match_templates
from kernellab.tasks.load import SUITE_ROOT, load_task

CORRECTNESS = with_stages(EvalOptions(request_timeout_s=300), Stage.SMOKE, Stage.SHAPE_SWEEP, Stage.STABILITY,
                          Stage.DETERMINISM, Stage.EDGE, Stage.BACKWARD)

# Which suite tasks each of these templates serves (a change here is a decision: review it).
SERVED = {
    "gated": {
        "gated_mlp/geglu_erf_backward", "gated_mlp/geglu_erf_concat", "gated_mlp/geglu_tanh_backward",
        "gated_mlp/geglu_tanh_concat", "gated_mlp/glu_sigmoid", "gated_mlp/reglu_concat", "gated_mlp/swiglu_backward",
        "gated_mlp/swiglu_clamped_interleaved", "gated_mlp/swiglu_concat",
    },
    "rope": {"positional/rope_gptj", "positional/rope_hf_position_ids", "positional/rope_hf_qk", "positional/rope_neox",
             "positional/rope_position_ids", "positional/rope_qk"},
    "attention": {"attention/attention_written_out", "attention/cross_attention", "attention/decode_kv_cache",
                  "attention/gqa_causal", "attention/mqa_causal", "attention/sdpa_causal", "attention/sdpa_noncausal"},
}
# Matmuls with backward (the forward-only ones are in test_kernel_templates.py).
MATMUL_BACKWARD = ["matmul/matmul_square", "matmul_epilogue/linear_bias", "matmul_epilogue/linear_bias_gelu"]
GATED_ELEMENTWISE = {"gated_mlp/geglu_erf_two_inputs", "gated_mlp/geglu_tanh_two_inputs", "gated_mlp/swiglu_two_inputs"}
CASES = sorted((task, name) for name, tasks in SERVED.items() for task in tasks)


def served_by(name: str) -> set[str]:
    found = set()
    for folder in sorted(p.parent for p in SUITE_ROOT.glob("*/*/reference.py")):
        task = load_task(folder)
        if any(m.template.name == name for m in match_templates(task)):
            found.add(task.id)
    return found


def render(task_id: str, template: str, params: dict | None = None) -> str:
    match = next(m for m in match_templates(load_task(task_id)) if m.template.name == template)
    return match.render(params)


def passes(task_id: str, source: str, tmp_path: Path) -> None:
    path = tmp_path / "candidate.py"
    path.write_text(source)
    task = load_task(task_id)
    with EvalSession(task, CORRECTNESS) as session:
        verdict = session.evaluate(path)
    assert verdict.correct, f"{task_id}: {verdict.status.value} at {verdict.failed_stage}: {verdict.error} " \
                            f"{verdict.violations}"
    stages = {s.name for s in verdict.stages if s.passed}
    assert {Stage.STATIC, Stage.LOAD, Stage.SMOKE, Stage.EDGE} <= stages
    if task.backward:
        assert Stage.BACKWARD in stages


@pytest.mark.parametrize("name", sorted(SERVED))
def test_each_template_serves_exactly_the_expected_suite_tasks(name):
    assert served_by(name) == SERVED[name]


def test_gated_chains_over_separate_inputs_are_plain_elementwise_chains():
    for task_id in GATED_ELEMENTWISE:
        assert [m.template.name for m in match_templates(load_task(task_id))] == ["elementwise"], task_id


@pytest.mark.parametrize(("task_id", "template"), CASES, ids=[f"{t}:{n}" for t, n in CASES])
def test_every_instantiation_passes_the_correctness_stages_in_the_interpreter(task_id, template, tmp_path):
    source = render(task_id, template)
    ast.parse(source)
    passes(task_id, source, tmp_path)


@pytest.mark.parametrize("task_id", MATMUL_BACKWARD)
def test_matmul_backward_passes_the_correctness_stages(task_id, tmp_path):
    assert load_task(task_id).backward
    passes(task_id, render(task_id, "matmul"), tmp_path)


# The persistent TMA-descriptor kernel (USE_TMA=2 runs it under the interpreter too) and split-K, with
# small tiles so that the small configs span several tiles and K steps.
SMALL_TILES = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "BLOCK_M_F32": 16, "BLOCK_N_F32": 16, "BLOCK_K_F32": 16}


@pytest.mark.parametrize("task_id", ["matmul/matmul_nt", "matmul/matmul_tn", "matmul_epilogue/linear_bias_silu",
                                     "matmul_epilogue/linear_bias_gelu"])
def test_the_persistent_tma_kernel_passes_too(task_id, tmp_path):
    source = render(task_id, "matmul", {**SMALL_TILES, "USE_TMA": 2, "SPLIT_K_BELOW": 0})
    assert "TensorDescriptor.from_tensor" in source
    passes(task_id, source, tmp_path)


def test_split_k_backward_passes_too(tmp_path):
    passes("matmul/matmul_square", render("matmul/matmul_square", "matmul",
                                          {**SMALL_TILES, "SPLIT_K_BELOW": 1024, "MAX_SPLIT_K": 4}), tmp_path)
