"""Templates: the registry, which suite tasks each one matches, and that every instantiation passes the
verifier's correctness stages under the Triton interpreter on the tasks' small configs."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest
from test_model_op_templates import SERVED as MODEL_OPS
from test_optimizer_templates import SERVED as OPTIMIZERS
from test_reduction_templates import ROW_REDUCTIONS
from test_reduction_templates import SERVED as REDUCTIONS

from kernellab.agents.search.params import find_knobs
from kernellab.evaluate.options import EvalOptions, with_stages
from kernellab.evaluate.session import EvalSession
from kernellab.evaluate.verdict import Stage
from kernellab.kernels import Template, match_templates, register_template, templates
from kernellab.tasks.load import SUITE_ROOT, load_task

CORRECTNESS = with_stages(EvalOptions(request_timeout_s=300), Stage.SMOKE, Stage.SHAPE_SWEEP, Stage.STABILITY,
                          Stage.DETERMINISM, Stage.EDGE, Stage.BACKWARD)

# Which suite tasks each template implements (a change here is a decision: review it).
EXPECTED = {
    "elementwise": {
        "elementwise/bias_gelu", "elementwise/clamp", "elementwise/elu", "elementwise/erf", "elementwise/exp",
        "elementwise/expm1", "elementwise/gelu_erf", "elementwise/gelu_tanh", "elementwise/hardswish",
        "elementwise/leaky_relu", "elementwise/log1p", "elementwise/mish", "elementwise/quick_gelu",
        "elementwise/relu", "elementwise/rsqrt", "elementwise/scale_bias_silu", "elementwise/sigmoid",
        "elementwise/silu", "elementwise/softplus", "elementwise/squared_relu", "elementwise/tanh",
        "fusion/bias_gelu_residual", "gated_mlp/geglu_erf_two_inputs", "gated_mlp/geglu_tanh_two_inputs",
        "gated_mlp/swiglu_two_inputs", "indexing/where",
    },
    "softmax": {
        "fusion/softcap_softmax", "reductions/logsumexp_rows", "softmax/log_softmax", "softmax/softmax",
        "softmax/softmax_long_rows", "softmax/softmax_short_rows", "softmax/softmax_temperature",
        "softmax/softmax_very_long_rows", "softmax/softmax_with_lse",
    },
    "row_reduction": ROW_REDUCTIONS,  # tests/kernels/test_reduction_templates.py
    "norm": {"normalization/layernorm", "normalization/layernorm_no_bias", "normalization/rmsnorm",
             "normalization/rmsnorm_gemma", "normalization/add_rmsnorm", "normalization/add_layernorm",
             "normalization/add_rmsnorm_hf", "normalization/qk_norm"},
    "cross_entropy": {"losses/cross_entropy", "losses/cross_entropy_2d", "losses/cross_entropy_ignore_index",
                      "losses/cross_entropy_label_smoothing", "losses/cross_entropy_none",
                      "losses/cross_entropy_causal_lm", "losses/nll_loss"},
    "linear_cross_entropy": {"fusion/linear_cross_entropy", "losses/fused_linear_cross_entropy"},
    "embedding": {"indexing/embedding"},
    "matmul": {
        "matmul/gram_matrix", "matmul/matmul_decode_skinny", "matmul/matmul_nt", "matmul/matmul_router_tall_skinny",
        "matmul/matmul_split_k", "matmul/matmul_square_tf32", "matmul/matmul_tn", "matmul_epilogue/addmm_alpha_beta",
        "matmul_epilogue/linear_bias_relu", "matmul_epilogue/linear_bias_relu_squared",
        "matmul_epilogue/linear_bias_silu", "matmul_epilogue/linear_layerscale_residual",
        "matmul_epilogue/linear_residual", "matmul_epilogue/lm_head_softcap",
        "matmul/matmul_square", "matmul_epilogue/linear_bias", "matmul_epilogue/linear_bias_gelu",  # with backward
        "matmul/bmm", "matmul/bmm_small_many", "matmul/matmul_4d_heads", "matmul/matmul_3d_shared_weight",
    },
    **MODEL_OPS,  # gated, rope, attention: tests/kernels/test_model_op_templates.py
    **OPTIMIZERS,  # in-place optimizer steps: tests/kernels/test_optimizer_templates.py
    **REDUCTIONS,  # whole-tensor, column and row-statistic reductions: tests/kernels/test_reduction_templates.py
}
MATCHED = sorted((task, name) for name, tasks in EXPECTED.items() for task in tasks)

# Parameters that send the row templates down their looped (long-row) paths, and matmul through
# split-K, on the small configs (values outside the search domains are fine for rendering).
LOOPED = [
    ("softmax/softmax_very_long_rows", "softmax", {"MAX_SINGLE": 64, "CHUNK": 64, "MIN_SEGMENT": 256,
                                                    "TARGET_PROGRAMS": 64}),
    ("softmax/softmax_long_rows", "softmax", {"MAX_SINGLE": 64, "CHUNK": 128}),
    ("softmax/softmax_with_lse", "softmax", {"MAX_SINGLE": 32, "CHUNK": 32, "MIN_SEGMENT": 32}),
    ("reductions/logsumexp_rows", "softmax", {"MAX_SINGLE": 32, "CHUNK": 32, "MIN_SEGMENT": 64}),
    ("fusion/softcap_softmax", "softmax", {"MAX_SINGLE": 32, "CHUNK": 32, "MIN_SEGMENT": 32, "TARGET_PROGRAMS": 8}),
    ("normalization/layernorm", "norm", {"MAX_SINGLE": 32, "CHUNK": 32, "TILE": 64, "BLOCK_N": 32,
                                         "ROW_GROUPS": 3}),
    ("normalization/rmsnorm_gemma", "norm", {"MAX_SINGLE": 32, "CHUNK": 32, "TILE": 64, "BLOCK_N": 32}),
    ("reductions/mean_rows", "row_reduction", {"CHUNK": 64, "TILE": 128}),
    ("reductions/absmax_rows", "row_reduction", {"CHUNK": 32, "TILE": 128}),
    ("elementwise/scale_bias_silu", "elementwise", {"BLOCK": 64, "BLOCK_N": 32, "ROW_GROUPS": 3}),
    ("matmul/matmul_nt", "matmul", {"SPLIT_K_BELOW": 1024, "MAX_SPLIT_K": 4, "BLOCK_M_F32": 16, "BLOCK_N_F32": 16,
                                    "BLOCK_K_F32": 16, "BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16}),
]


@cache
def suite_matches() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for folder in sorted(p.parent for p in SUITE_ROOT.glob("*/*/reference.py")):
        task = load_task(folder)
        for match in match_templates(task):
            found.setdefault(match.template.name, set()).add(task.id)
    return found


def render(task_id: str, template: str, params: dict | None = None) -> str:
    match = next(m for m in match_templates(load_task(task_id)) if m.template.name == template)
    return match.render(params)


def passes(task_id: str, source: str, tmp_path: Path) -> None:
    path = tmp_path / "candidate.py"
    path.write_text(source)
    with EvalSession(load_task(task_id), CORRECTNESS) as session:
        verdict = session.evaluate(path)
    assert verdict.correct, f"{task_id}: {verdict.status.value} at {verdict.failed_stage}: {verdict.error} " \
                            f"{verdict.violations}"
    stages = {s.name for s in verdict.stages if s.passed}
    assert {Stage.STATIC, Stage.LOAD, Stage.SMOKE, Stage.EDGE} <= stages
    if load_task(task_id).backward:
        assert Stage.BACKWARD in stages


def test_the_registry_lists_the_built_in_templates_by_name():
    assert set(templates()) == set(EXPECTED)
    for name, template in templates().items():
        assert template.name == name
        budget = template.budget.lower()
        assert "flops" in budget and ("reads" in budget or "bytes" in budget), f"{name} does not state its budget"


def test_a_name_cannot_be_registered_twice():
    with pytest.raises(ValueError, match="registered twice"):
        @register_template("matmul")
        class Other(Template):  # the decorator is the test
            def match(self, task, model):
                return None

            def knobs(self, match):
                return []

            def render(self, match, params):
                return ""


def test_each_template_matches_exactly_the_expected_suite_tasks():
    assert suite_matches() == EXPECTED


def test_tasks_outside_a_template_are_not_matched():
    # two products in one forward, broadcast operands, top-k, causal masks: no template claims them
    for task_id in ("matmul/lowrank_factorized", "elementwise/adaln_modulate", "reductions/topk_rows",
                    "softmax/causal_softmax", "softmax/softmax_rel_pos_bias", "conv_pool/avg_pool2d"):
        assert match_templates(load_task(task_id)) == [], task_id


@pytest.mark.parametrize(("task_id", "template"), MATCHED, ids=[f"{t}:{n}" for t, n in MATCHED])
def test_every_instantiation_passes_the_correctness_stages_in_the_interpreter(task_id, template, tmp_path):
    source = render(task_id, template)
    ast.parse(source)
    passes(task_id, source, tmp_path)


@pytest.mark.parametrize(("task_id", "template", "params"), LOOPED, ids=[f"{t}:{n}" for t, n, _ in LOOPED])
def test_looped_and_split_paths_pass_too(task_id, template, params, tmp_path):
    passes(task_id, render(task_id, template, params), tmp_path)


def test_rendered_knobs_are_what_the_tuner_finds():
    for task_id, template in [("matmul/matmul_nt", "matmul"), ("softmax/softmax", "softmax"),
                              ("elementwise/bias_gelu", "elementwise"), ("normalization/layernorm", "norm"),
                              ("reductions/sum_rows", "row_reduction")]:
        match = next(m for m in match_templates(load_task(task_id)) if m.template.name == template)
        declared = {k.name: k for k in match.template.knobs(match)}
        found = {k.name: k for k in find_knobs(match.render()) if k.kind == "constant"}
        assert set(found) == set(declared), task_id
        for name, spec in declared.items():
            assert found[name].value == spec.default and len(found[name].domain) > 1


def test_unknown_parameters_are_refused():
    match = match_templates(load_task("elementwise/relu"))[0]
    with pytest.raises(ValueError, match="unknown parameters"):
        match.render({"NOT_A_KNOB": 4})


def test_presets_render_distinct_files():
    for name, tasks in EXPECTED.items():
        task_id = min(tasks)
        match = next(m for m in match_templates(load_task(task_id)) if m.template.name == name)
        sources = [match.render(p) for p in match.presets()]
        assert len(set(sources)) == len(sources) >= 2, name
