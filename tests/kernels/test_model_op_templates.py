"""The templates for the ops a transformer's forward and training step spend time in (gated activations,
RoPE, attention, matmul with backward): the suite tasks each one serves, the reader's patterns they
rely on, and the paths the small configs would not take by default (the persistent TMA matmul, split-K
backward), each through the verifier's correctness stages under the Triton interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kernellab.evaluate.options import EvalOptions, with_stages
from kernellab.evaluate.session import EvalSession
from kernellab.evaluate.verdict import Stage
from kernellab.kernels import match_templates
from kernellab.kernels.reference_model import Node, read_model
from kernellab.kernels.rope import read_rotation
from kernellab.tasks.load import load_task

CORRECTNESS = with_stages(EvalOptions(request_timeout_s=300), Stage.SMOKE, Stage.SHAPE_SWEEP, Stage.STABILITY,
                          Stage.DETERMINISM, Stage.EDGE, Stage.BACKWARD)

# Which suite tasks each of these templates serves (a change here is a decision: review it); the
# registry, matching and per-instantiation checks in test_kernel_templates.py run over these too.
SERVED = {
    "gated": {
        "gated_mlp/geglu_erf_backward", "gated_mlp/geglu_erf_concat", "gated_mlp/geglu_tanh_backward",
        "gated_mlp/geglu_tanh_concat", "gated_mlp/glu_sigmoid", "gated_mlp/reglu_concat", "gated_mlp/swiglu_backward",
        "gated_mlp/swiglu_clamped_interleaved", "gated_mlp/swiglu_concat", "gated_mlp/reglu_backward",
    },
    "rope": {"positional/rope_gptj", "positional/rope_hf_position_ids", "positional/rope_hf_qk", "positional/rope_neox",
             "positional/rope_position_ids", "positional/rope_qk"},
    "gated_matmul": {"matmul_epilogue/geglu_merged_gate_up", "matmul_epilogue/swiglu_gate_up"},
    "attention": {"attention/attention_written_out", "attention/cross_attention", "attention/decode_kv_cache",
                  "attention/attention_additive_mask", "attention/gqa_causal_train",
                  "attention/gqa_causal", "attention/mqa_causal", "attention/sdpa_causal", "attention/sdpa_noncausal"},
}
GATED_ELEMENTWISE = {"gated_mlp/geglu_erf_two_inputs", "gated_mlp/geglu_tanh_two_inputs", "gated_mlp/swiglu_two_inputs"}


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


def test_gated_chains_over_separate_inputs_are_plain_elementwise_chains():
    for task_id in GATED_ELEMENTWISE:
        assert [m.template.name for m in match_templates(load_task(task_id))] == ["elementwise"], task_id


# The persistent TMA-descriptor kernel (USE_TMA=2 runs it under the interpreter too) and split-K, with
# small tiles so that the small configs span several tiles and K steps.
SMALL_TILES = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "BLOCK_M_F32": 16, "BLOCK_N_F32": 16, "BLOCK_K_F32": 16}


@pytest.mark.parametrize("task_id", ["matmul/matmul_nt", "matmul/matmul_tn", "matmul_epilogue/linear_bias_silu",
                                     "matmul_epilogue/linear_bias_gelu"])
def test_the_persistent_tma_kernel_passes_too(task_id, tmp_path):
    source = render(task_id, "matmul", {**SMALL_TILES, "USE_TMA": 2, "SPLIT_K_BELOW": 0})
    passes(task_id, source, tmp_path)


def run_in_interpreter(candidate: str, checks: str, tmp_path: Path) -> None:
    """Run ``checks`` against the candidate file in a fresh interpreter-mode process (Triton reads
    TRITON_INTERPRET once per process)."""
    (tmp_path / "candidate.py").write_text(candidate)
    script = tmp_path / "checks.py"
    script.write_text("import torch\nimport candidate as module\n" + textwrap.dedent(checks))
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    result = subprocess.run([sys.executable, str(script)], check=False, cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]


def test_the_tma_path_is_the_one_taken_for_16_bit_operands(tmp_path):
    run_in_interpreter(render("matmul/matmul_nt", "matmul", {**SMALL_TILES, "USE_TMA": 2}), """
        a, b = torch.randn(40, 48, dtype=torch.float16), torch.randn(24, 48, dtype=torch.float16)
        assert module._tma_ok(a, b.t()) and module._tma_ok(a.t().contiguous().t(), b.t())
        assert not module._tma_ok(a.float(), b.t().float())  # float32: the pointer kernel
        odd = torch.randn(40, 45, dtype=torch.float16)
        assert not module._tma_ok(odd, odd.t())  # rows of 90 bytes: not 16-byte aligned
        out = module.ModelNew()(a, b)
        torch.testing.assert_close(out.float(), a.float() @ b.float().t(), atol=2e-2, rtol=2e-3)
        module.USE_TMA = 1  # the default: descriptors only on a GPU of compute capability >= 9
        assert not module._tma_ok(a, b.t())
    """, tmp_path)


def test_split_k_backward_passes_too(tmp_path):
    passes("matmul/matmul_square", render("matmul/matmul_square", "matmul",
                                          {**SMALL_TILES, "SPLIT_K_BELOW": 1024, "MAX_SPLIT_K": 4}), tmp_path)



# ------------------------------------------------------------------------------------ the reader

def _model(forward: str, helpers: str = "") -> tuple:
    source = f"""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
{helpers}
class Model(nn.Module):
    def __init__(self):
        super().__init__()

{forward}
"""
    model = read_model(source)
    assert model.why_not is None, model.why_not
    return model.outputs, model.forward_args


def test_column_views_read_as_views_of_the_last_dimension():
    (out,), _ = _model("""    def forward(self, x):
        gate, up = x.chunk(2, dim=-1)
        return F.silu(gate) * up""")
    x = Node("input", name="x")
    assert out == Node("mul", (Node("silu", (Node("cols", (x,), value=("chunk", 0, 2)),)),
                               Node("cols", (x,), value=("chunk", 1, 2))))
    (glu,), _ = _model("""    def forward(self, x):
        return F.glu(x, dim=-1)""")
    assert glu == Node("mul", (Node("cols", (x,), value=("chunk", 0, 2)),
                               Node("sigmoid", (Node("cols", (x,), value=("chunk", 1, 2)),))))
    (odd,), _ = _model("""    def forward(self, x):
        return x[..., 1::2] * 2.0""")
    assert odd.args[0] == Node("cols", (x,), value=("every", 1, 2))


def test_a_chunk_along_another_dimension_is_not_read():
    source = """
import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        a, b = x.chunk(2, dim=0)
        return a * b
"""
    assert "chunk" in read_model(source).why_not


HF_ROTATE_HALF = """
def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)
"""


def test_every_way_of_writing_a_rotation_reads_as_the_same_rotation():
    neox, args = _model("""    def forward(self, x, cos, sin):
        cos, sin = cos[:, None, :], sin[:, None, :]
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)""")
    swapped, _ = _model("""    def forward(self, x, cos, sin):
        x1, x2 = x.chunk(2, dim=-1)
        c, s = cos.unsqueeze(1), sin.unsqueeze(1)
        return torch.cat([c * x1 + (-x2) * s, s * x1 + c * x2], dim=-1)""")
    assert read_rotation(neox[0], args) == read_rotation(swapped[0], args)
    hf, hf_args = _model("""    def forward(self, q, k, cos, sin):
        cos = cos.unsqueeze(1)
        sin = sin.unsqueeze(1)
        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin""", HF_ROTATE_HALF)
    rq, rk = (read_rotation(o, hf_args) for o in hf)
    assert (rq["x"], rk["x"]) == ("q", "k") and rq["cos"] == rk["cos"] and rq["layout"] == "chunk"
    assert (rq["sign0"], rq["sign1"]) == (-1, 1) and [t.part for t in rq["cos"]] == [0, 1]


def test_what_is_not_a_rotation_is_not_matched():
    from kernellab.kernels.rope import _NotRope

    for body in ("return torch.cat([x1 * cos - x2 * sin, x2 * cos + x2 * sin], dim=-1)",  # x2 twice
                 "return torch.cat([x1 * cos - x2 * sin, x2 * cos * x1 + x1 * sin], dim=-1)",  # not linear
                 "return torch.cat([x1 * cos - x2 * sin, x2 * sin + x1 * cos], dim=-1)"):  # tables swapped
        (out,), args = _model(f"""    def forward(self, x, cos, sin):
        x1, x2 = x.chunk(2, dim=-1)
        {body}""")
        with pytest.raises(_NotRope):
            read_rotation(out, args)


def test_attention_with_a_boolean_mask_keeps_only_the_true_keys(tmp_path):
    # the suite's masked task is additive; a boolean attn_mask takes the other branch of the kernel
    run_in_interpreter(render("attention/attention_additive_mask", "attention", {"BLOCK_M_F32": 16, "BLOCK_N_F32": 16}),
                       """
        torch.manual_seed(0)
        q, k, v = (torch.randn(2, 3, 37, 16) for _ in range(3))
        mask = (torch.rand(2, 1, 37, 37) > 0.6) | torch.eye(37, dtype=torch.bool)  # every row keeps a key
        out = module.ModelNew()(q, k, v, mask)
        expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    """, tmp_path)


EXTRACTED_LINEAR = '''
import torch
import torch.nn as nn
import torch.nn.functional as F

B = 2
S = 5
K = 40
N = 24


class Model(nn.Module):
    """A projection as a model-graph extractor writes it: the weight is an input, x has leading dims."""

    def __init__(self):
        super().__init__()

    def forward(self, x, w):
        return F.linear(x, w)


def get_inputs():
    return [torch.randn(B, S, K), torch.randn(N, K) / K ** 0.5]


def get_init_inputs():
    return []
'''

EXTRACTED_LINEAR_TOML = '''schema = 1
category = "matmul"
description = "x @ w.T with x of shape (B, S, K) and the weight an input, forward and backward."
dtypes = ["float32", "float16"]
fp32_precision = "ieee"
backward = true
grad_inputs = ["x", "w"]
configs = [{ B = 2, S = 5, K = 40, N = 24 }]
edge = [{ B = 1, S = 1, K = 1, N = 1 }, { B = 3, S = 7, K = 129, N = 17 }]
small = [{ B = 2, S = 5, K = 40, N = 24 }]
'''


def test_an_extracted_projection_with_its_weight_as_input_passes_forward_and_backward(tmp_path):
    folder = tmp_path / "extracted_linear"
    folder.mkdir()
    (folder / "reference.py").write_text(EXTRACTED_LINEAR)
    (folder / "task.toml").write_text(EXTRACTED_LINEAR_TOML)
    task = load_task(folder)
    (match,) = match_templates(task)
    assert match.template.name == "matmul" and match.spec["layout"] == "rows"
    path = tmp_path / "candidate.py"
    path.write_text(match.render({**SMALL_TILES}))
    with EvalSession(task, CORRECTNESS) as session:
        verdict = session.evaluate(path)
    assert verdict.correct, f"{verdict.failed_stage}: {verdict.error}"
    assert Stage.BACKWARD in {s.name for s in verdict.stages if s.passed}


ROOFLINE = Path(__file__).resolve().parents[2] / "benchmarks" / "roofline.py"


def test_the_roofline_benchmark_lists_its_rows_without_a_gpu():
    out = subprocess.run([sys.executable, str(ROOFLINE), "--dry-run"], capture_output=True, text=True, check=True,
                         timeout=300).stdout
    lines = out.strip().splitlines()
    assert any(line.startswith("anchor matmul 4096^3 | float16") for line in lines)
    assert "positional/rope_qk " in out and "template rope" in out and "template gated_matmul" in out
    rows, tasks = lines[-1].split(" rows, ")
    assert int(rows) > int(tasks.split()[0]) >= 80


def test_the_roofline_benchmark_runs_its_plumbing_on_the_cpu(tmp_path):
    out = tmp_path / "roofline.json"
    subprocess.run([sys.executable, str(ROOFLINE), "--cpu-smoke", "--tasks", "positional/rope_qk", "--dtypes",
                    "float32", "--out", str(out)], capture_output=True, text=True, check=True, timeout=600)
    (row,) = json.loads(out.read_text())["rows"]
    assert row["phase"] == "forward+backward" and row["results"]["eager"]["us"] > 0
    assert row["results"]["search"]["us"] > 0, row["results"]["search"]["note"]  # outputs and gradients agreed
    assert row["search_kernel"].startswith("rope preset 0")


@pytest.mark.parametrize(("task_id", "template"), [("positional/rope_qk", "rope"),
                                                   ("matmul_epilogue/swiglu_gate_up", "gated_matmul"),
                                                   ("attention/gqa_causal_train", "attention")])
def test_the_search_agent_proposes_the_template_screened_by_its_own_session(task_id, template, tmp_path):
    from kernellab.agents.base import ProposalRequest, create_agent
    from kernellab.agents.workspace import build_workspace

    task = load_task(task_id)
    workspace = build_workspace(task, tmp_path / "ws").path
    agent = create_agent("search", max_screen=2)
    try:
        parent = (workspace / "kernel.py").read_text()
        proposal = agent.propose(ProposalRequest(workspace=workspace, task_id=task_id, iteration=0, parent=parent,
                                                 deadline_s=600.0))
    finally:
        agent.close()
    assert proposal.source and proposal.note.startswith(f"template {template}"), proposal.note
    assert "unscreened" not in proposal.note
    passes(task_id, proposal.source, tmp_path)


def test_rendered_knobs_are_what_the_tuner_finds():
    from kernellab.agents.search.params import find_knobs

    for task_id, name in [("positional/rope_qk", "rope"), ("gated_mlp/swiglu_concat", "gated"),
                          ("attention/sdpa_causal", "attention"), ("matmul_epilogue/swiglu_gate_up", "gated_matmul"),
                          ("matmul/bmm", "matmul")]:
        match = next(m for m in match_templates(load_task(task_id)) if m.template.name == name)
        declared = {k.name: k for k in match.template.knobs(match)}
        found = {k.name: k for k in find_knobs(match.render()) if k.kind == "constant"}
        assert set(found) == set(declared), name
        for knob, spec in declared.items():
            assert found[knob].value == spec.default and len(found[knob].domain) > 1, (name, knob)
