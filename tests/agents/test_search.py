"""The ``search`` agent: the launch-parameter finder and rewriter on real suite baselines, the order of
its variants, and its proposals (distinct, valid, within the deadline, nothing when nothing is left)."""

from __future__ import annotations

import ast
import importlib.util
import textwrap
import time
from argparse import Namespace
from pathlib import Path

import pytest

from kernellab.agents.base import AgentError, ProposalRequest, create_agent, registered
from kernellab.agents.search.params import apply_values, describe, find_knobs
from kernellab.agents.search.screen import Screened, faster
from kernellab.agents.search.space import Hint, moves, variants
from kernellab.agents.workspace import build_workspace
from kernellab.evaluate.options import EvalOptions, with_stages
from kernellab.evaluate.session import EvalSession
from kernellab.evaluate.verdict import Stage
from kernellab.tasks.load import SUITE_ROOT, load_task
from kernellab.tasks.model import Visibility

ROOT = Path(__file__).parents[2]
CORRECTNESS = with_stages(EvalOptions(request_timeout_s=300), Stage.SMOKE, Stage.SHAPE_SWEEP, Stage.EDGE,
                          Stage.BACKWARD)
TRITON_BASELINES = sorted(p for p in SUITE_ROOT.glob("*/*/baseline.py") if "load_inline" not in p.read_text())


def baseline(task_id: str) -> str:
    return load_task(task_id).baseline_source


def knobs_by_label(source: str) -> dict[str, object]:
    return {k.name: k for k in find_knobs(source)}


def request(workspace: Path, task_id: str, parent: str, iteration: int = 0, **kw) -> ProposalRequest:
    return ProposalRequest(workspace=workspace, task_id=task_id, iteration=iteration, parent=parent, **kw)


def correct(task_id: str, source: str, tmp_path: Path) -> bool:
    path = tmp_path / "candidate.py"
    path.write_text(source)
    with EvalSession(load_task(task_id), CORRECTNESS) as session:
        verdict = session.evaluate(path)
    return verdict.correct


# ------------------------------------------------------------------------------------ the knob finder


def test_a_gemm_baseline_has_its_tiles_tied_to_the_grid():
    knobs = knobs_by_label(baseline("matmul/matmul_nt"))
    m, n, k = knobs["_matmul_kernel.BLOCK_M"], knobs["_matmul_kernel.BLOCK_N"], knobs["_matmul_kernel.BLOCK_K"]
    assert (m.role, m.axes, n.role, n.axes, k.role) == ("tile", {0}, "tile", {1}, "loop")
    assert len(m.sites) == len(n.sites) == 2 and len(k.sites) == 1  # the launch keyword and the grid's cdiv
    assert m.dot and m.domain[0] == 16 and m.domain[-1] == 256 and k.domain[-1] == 128
    warps, stages = knobs["_matmul_kernel.num_warps"], knobs["_matmul_kernel.num_stages"]
    assert not warps.present and warps.value == 4 and not stages.present and stages.value == 3


def test_one_block_size_over_two_axes_and_loop_blocks_are_told_apart():
    gram = knobs_by_label(baseline("matmul/gram_matrix"))["_gram_kernel.BLOCK"]
    assert gram.role == "tile" and gram.axes == {0, 1} and len(gram.sites) == 3
    softmax = knobs_by_label(baseline("fusion/softcap_softmax"))["_softcap_softmax_kernel.BLOCK"]
    assert softmax.role == "loop" and len(softmax.sites) == 1 and softmax.domain[-1] == 8192


def test_a_grid_shared_by_launches_makes_their_blocks_one_knob():
    knobs = find_knobs(baseline("optimizer/adamw"))
    blocks = [k for k in knobs if k.kind == "block"]
    assert len(blocks) == 1 and blocks[0].label == "BLOCK" and len(blocks[0].sites) == 4


def test_a_local_variable_feeding_block_and_grid_is_the_knob():
    knobs = knobs_by_label(baseline("optimizer/amp_unscale_check"))
    block = knobs["forward.block"]
    assert block.role == "tile" and len(block.sites) == 1
    source = apply_values(baseline("optimizer/amp_unscale_check"), list(knobs.values()), {"forward.block": 256})
    assert "block = 256" in source and source.count("BLOCK=block") == 4


def test_a_block_that_covers_a_row_is_never_shrunk():
    source = textwrap.dedent("""
        import torch, triton, triton.language as tl

        @triton.jit
        def _row_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            cols = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + tl.program_id(0) * n + cols, mask=cols < n)
            tl.store(y_ptr + tl.program_id(0) * n + cols, x / tl.sum(x, 0), mask=cols < n)

        def run(x, y):
            _row_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=4096)
    """)
    (block,) = [k for k in find_knobs(source) if k.kind == "block"]
    assert block.role == "cover" and not block.tunable
    assert all(block.name not in move for move in moves(find_knobs(source)))


def test_annotated_constants_autotune_configs_and_meta_grids():
    source = textwrap.dedent("""
        import triton, triton.language as tl

        ROWS = 64  # knob: 16..256. rows per program
        SPLITS = 3  # knob: 1,3,5

        @triton.autotune(configs=[triton.Config({"BLOCK_M": 64, "GROUP_M": 8}, num_warps=4),
                                  triton.Config({"BLOCK_M": 128, "GROUP_M": 8}, num_stages=2)], key=["n"])
        @triton.jit
        def _kernel(x_ptr, n, BLOCK_M: tl.constexpr, GROUP_M: tl.constexpr):
            offs = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

        def run(x):
            grid = lambda meta: (triton.cdiv(x.numel(), meta["BLOCK_M"]),)
            _kernel[grid](x, x.numel())
    """)
    knobs = knobs_by_label(source)
    assert knobs["ROWS"].domain == (16, 32, 64, 128, 256) and knobs["SPLITS"].domain == (1, 3, 5)
    assert knobs["_kernel.autotune[0].BLOCK_M"].value == 64 and knobs["_kernel.autotune[1].num_stages"].value == 2
    assert not knobs["_kernel.autotune[0].num_stages"].present and knobs["_kernel.autotune[1].GROUP_M"].kind == "group"
    assert "_kernel.num_warps" not in knobs  # autotuned launches take their warps from the configs
    edited = apply_values(source, list(knobs.values()), {"ROWS": 128, "_kernel.autotune[0].num_stages": 4,
                                                         "_kernel.autotune[1].BLOCK_M": 256})
    assert "ROWS = 128  # knob" in edited and "num_warps=4, num_stages=4)" in edited and '"BLOCK_M": 256' in edited


def test_grid_literals_written_as_rounding_up_follow_the_block():
    source = textwrap.dedent("""
        import triton, triton.language as tl

        @triton.jit
        def _scale(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

        def run(x):
            n = x.numel()
            _scale[((n + 255) // 256,)](x, n, BLOCK=256)
    """)
    knobs = find_knobs(source)
    edited = apply_values(source, knobs, {"_scale.BLOCK": 1024})
    assert "_scale[((n + 1023) // 1024,)](x, n, BLOCK=1024)" in edited


@pytest.mark.parametrize("path", TRITON_BASELINES, ids=[str(p.parent.relative_to(SUITE_ROOT)) for p in TRITON_BASELINES])
def test_every_rewrite_of_a_baseline_changes_only_its_sites(path):
    source = path.read_text()
    knobs = find_knobs(source)
    assert knobs, "every Triton baseline has at least its launch options to tune"
    lines = source.splitlines(keepends=True)
    for move in moves(knobs)[:40]:
        edited = apply_values(source, knobs, move)
        ast.parse(edited)
        touched = {s.line for k in knobs if k.name in move for s in k.sites}
        edited_lines = edited.splitlines(keepends=True)
        assert len(edited_lines) == len(lines)
        for number, (old, new) in enumerate(zip(lines, edited_lines), start=1):
            assert old == new or number in touched, f"line {number} changed by {move}"
        again = {k.name: k for k in find_knobs(edited)}
        for name, value in move.items():  # the rewrite reads back as the value it wrote
            assert again[name].value == value, (name, value)


def test_descriptions_name_kernel_knob_and_values():
    knobs = find_knobs(baseline("matmul/matmul_nt"))
    text = describe(knobs, {"_matmul_kernel.BLOCK_M": 128, "_matmul_kernel.num_warps": 8})
    assert text == "_matmul_kernel.BLOCK_M 32→128, _matmul_kernel.num_warps default→8"


# ------------------------------------------------------------------------------------ the variant order


def test_gemm_presets_come_first_and_the_order_is_seeded():
    knobs = find_knobs(baseline("matmul/matmul_nt"))
    first = moves(knobs, seed=0)[0]
    assert first["_matmul_kernel.BLOCK_M"] == 128 and first["_matmul_kernel.BLOCK_N"] == 128
    assert moves(knobs, seed=1) == moves(knobs, seed=1)
    tail0, tail1 = moves(knobs, seed=0)[8:], moves(knobs, seed=1)[8:]
    assert sorted(map(str, tail0)) == sorted(map(str, tail1)) and tail0 != tail1


def test_a_kept_change_is_followed_one_step_further():
    knobs = find_knobs(baseline("optimizer/lion"))
    move = moves(knobs, hint=Hint((("_lion_kernel.BLOCK", 256, 1024),)))[0]
    assert move == {"_lion_kernel.BLOCK": 512} or move == {"_lion_kernel.BLOCK": 2048}
    kept = apply_values(baseline("optimizer/lion"), knobs, {"_lion_kernel.BLOCK": 1024})
    after = find_knobs(kept)
    assert moves(after, hint=Hint((("_lion_kernel.BLOCK", 256, 1024),)))[0] == {"_lion_kernel.BLOCK": 2048}


def test_variants_are_distinct_and_never_the_source():
    source = baseline("attention/attention_additive_mask")
    found = variants(source, find_knobs(source))
    texts = [v.source for v in found]
    assert len(texts) == len(set(texts)) > 5 and source not in texts


def test_shrunk_and_grown_tiles_stay_correct_in_the_interpreter(tmp_path):
    source = baseline("matmul/matmul_nt")
    knobs = find_knobs(source)
    shrunk = apply_values(source, knobs, {"_matmul_kernel.BLOCK_M": 16, "_matmul_kernel.BLOCK_N": 64,
                                          "_matmul_kernel.BLOCK_K": 16})
    assert "triton.cdiv(M, 16)" in shrunk and "triton.cdiv(N, 64)" in shrunk
    assert correct("matmul/matmul_nt", shrunk, tmp_path)


TUNED = ["attention/attention_additive_mask", "conv_pool/global_avg_pool", "fusion/softcap_softmax",
         "matmul/gram_matrix", "matmul/matmul_decode_skinny", "matmul_epilogue/linear_bias_silu",
         "optimizer/adamw", "optimizer/amp_unscale_check", "quantization/quant_int8_per_token"]


@pytest.mark.parametrize("task_id", TUNED)
def test_the_first_rewrites_and_a_shrinking_one_pass_the_verifier(task_id, tmp_path):
    source = baseline(task_id)
    found = variants(source, find_knobs(source))
    shrinking = [v for v in found if any(new < old for name, old, new in _changes(source, v))][:1]
    with EvalSession(load_task(task_id), CORRECTNESS) as session:
        for i, variant in enumerate(found[:2] + shrinking):
            path = tmp_path / f"variant_{i}.py"
            path.write_text(variant.source)
            verdict = session.evaluate(path)
            assert verdict.correct, f"{variant.description}: {verdict.error}"


def _changes(source: str, variant) -> list[tuple[str, int, int]]:
    old = {k.name: k.value for k in find_knobs(source)}
    return [(name, old[name], value) for name, value in variant.values]


# ------------------------------------------------------------------------------------ the agent


def test_search_is_registered_without_an_llm_and_checks_its_options():
    cls = registered()["search"]
    assert cls.uses_llm is False and cls.availability().usable
    with pytest.raises(AgentError, match="unknown option"):
        create_agent("search", model="gpt")
    with pytest.raises(AgentError, match="true or false"):
        create_agent("search", screen="maybe")
    with pytest.raises(AgentError, match="nothing to propose"):
        create_agent("search", templates=False, tune="off")


def test_proposals_are_distinct_templates_first_then_rewrites(tmp_path):
    task = load_task("matmul/matmul_nt")
    workspace = build_workspace(task, tmp_path / "ws").path
    agent = create_agent("search", screen=False)
    proposals = [agent.propose(request(workspace, task.id, task.baseline_source, i)) for i in range(8)]
    sources = [p.source for p in proposals]
    assert all(sources) and len(set(sources)) == 8 and task.baseline_source not in sources
    assert proposals[0].note.startswith("template matmul") and proposals[-1].note.startswith("tune:")
    for source in sources:
        ast.parse(source)
    assert correct(task.id, sources[0], tmp_path) and correct(task.id, sources[-1], tmp_path)
    agent.close()


def test_a_kept_proposal_becomes_the_base_of_the_next(tmp_path):
    task = load_task("optimizer/lion")
    agent = create_agent("search", screen=False, templates=False)
    first = agent.propose(request(tmp_path, task.id, task.baseline_source))
    assert "BLOCK 256→1024" in first.note
    second = agent.propose(request(tmp_path, task.id, first.source, 1))  # kept: its parent is the proposal
    assert "BLOCK 1024→2048" in second.note
    third = agent.propose(request(tmp_path, task.id, first.source, 2))  # reverted: next move of the same parent
    assert third.source not in (first.source, second.source) and "1024→" in third.note


def test_no_template_and_no_knobs_is_no_source_with_a_reason(tmp_path):
    task = load_task("conv_pool/avg_pool2d")  # a CUDA baseline: no Triton launch, and no template fits
    assert "load_inline" in task.baseline_source
    agent = create_agent("search", screen=True)
    proposal = agent.propose(request(tmp_path, task.id, task.baseline_source))
    assert proposal.source is None and "no template matches" in proposal.note


def test_the_agent_runs_out_of_rewrites_then_says_so(tmp_path):
    task = load_task("optimizer/lion")
    agent = create_agent("search", screen=False)
    notes = [agent.propose(request(tmp_path, task.id, task.baseline_source, i)) for i in range(12)]
    produced = [p for p in notes if p.source]
    assert 3 <= len(produced) < 12 and notes[-1].source is None and "no untried" in notes[-1].note


def test_a_short_deadline_returns_at_once_unscreened(tmp_path):
    task = load_task("matmul/matmul_nt")
    agent = create_agent("search")
    started = time.monotonic()
    proposal = agent.propose(request(tmp_path, task.id, task.baseline_source, deadline_s=2.0))
    assert time.monotonic() - started < 2.0
    assert proposal.source and "unscreened" in proposal.note and proposal.usage.steps == 0
    agent.close()


def test_screening_returns_a_checked_candidate_within_the_deadline(tmp_path):
    task = load_task("softmax/softmax")
    workspace = build_workspace(task, tmp_path / "ws").path
    agent = create_agent("search", max_screen=3)
    started = time.monotonic()
    skeleton = (workspace / "kernel.py").read_text()  # the task has no baseline: the workspace's skeleton
    proposal = agent.propose(request(workspace, task.id, skeleton, deadline_s=240))
    assert time.monotonic() - started < 240
    assert proposal.source and "1 screened, 0 incorrect" in proposal.note and proposal.usage.steps == 1
    screened_task = agent._pools[task.id].task
    assert not screened_task.configs_of(Visibility.HOLDOUT)  # the agent never holds holdout configs
    again = agent.propose(request(workspace, task.id, proposal.source, 1, deadline_s=240))
    assert again.source and again.source != proposal.source
    agent.close()


def test_faster_needs_the_gain_beyond_noise():
    def screened(median: float, half: float) -> Screened:
        return Screened(True, median, (("c|float32|forward", median, median - half, median + half),), None, 0.0)

    assert faster(screened(50.0, 1.0), screened(100.0, 1.0))
    assert not faster(screened(99.5, 0.1), screened(100.0, 0.1))  # under 1%
    assert not faster(screened(95.0, 10.0), screened(100.0, 10.0))  # within the noise
    assert not faster(Screened(True, None, (), None, 0.0), screened(100.0, 1.0))


# ------------------------------------------------------------------------------------ the benchmark's plumbing


def test_the_benchmark_runs_one_task_under_the_interpreter(tmp_path):
    spec = importlib.util.spec_from_file_location("search_baselines", ROOT / "benchmarks" / "search_baselines.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    args = Namespace(small=True, max_proposals=2, time_per_task=120.0, seed=0, with_compile=False, time_holdout=False,
                     strategy="keep-revert", patience=3, population=4)
    result = module.run_task("optimizer/lion", args, tmp_path)
    # A real solve: two proposals judged, each recorded in the trajectory; without timings neither
    # can be shown faster than the correct baseline, so the baseline is kept and passes its final verdict.
    assert result["status"] == "passed" and result["passed"] and result["iterations"] == 2
    assert [a["candidate"] for a in result["attempts"]] == ["c1", "c2"]
    # Lion is served by the in-place update template: its default and a second knob set are proposed.
    assert all(a["note"].startswith("template inplace_update") and a["decision"] == "revert"
               for a in result["attempts"])
    assert result["kept"] == "the baseline" and Path(result["trajectory"]).is_file()
    assert "| optimizer/lion |" in module.table([result])
