"""``solve`` end to end on the CPU: real agents (replay, api and a CLI template against the scripted
model server), real evaluations under the Triton interpreter on the small configs of the suite task
``elementwise/relu``, a real results store. The recorded kernels are one wrong ReLU (it leaks half
of the negative inputs), one correct one, and a correct variant with another block size."""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from model_server import RecordedRequest, ScriptedModelServer, Turn

from kernellab.agents.confine import probe_confinement
from kernellab.agents.solve import SolveError, SolveOptions, solve
from kernellab.agents.strategies.context import SolveProgress
from kernellab.agents.strategies.verifier import precision_recall
from kernellab.agents.trajectory import iteration_table, iterations, read_trajectory
from kernellab.agents.workspace import public_task
from kernellab.evaluate.verdict import Stage
from kernellab.score import (
    Store,
    attempt_points_from_store,
    per_iteration,
    results_from_store,
)
from kernellab.tasks.load import load_task

TASK = "elementwise/relu"
GOOD = '''"""ReLU in Triton, forward and backward: reads x, writes y (and dx from x and dy)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_fwd(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.where(x > 0, x, 0.0).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _relu_bwd(x_ptr, dy_ptr, dx_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0)
    tl.store(dx_ptr + offs, tl.where(x > 0, dy, 0.0).to(dx_ptr.dtype.element_ty), mask=mask)


BLOCK = 1024


class _ReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        if n:
            _relu_fwd[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK)
        ctx.save_for_backward(x)
        return y

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        dy = dy.contiguous()
        dx = torch.empty_like(x)
        n = x.numel()
        if n:
            _relu_bwd[(triton.cdiv(n, BLOCK),)](x, dy, dx, n, BLOCK=BLOCK)
        return dx


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ReLU.apply(x)
'''
WRONG = GOOD.replace("tl.where(x > 0, x, 0.0)", "tl.where(x > 0, x, 0.5 * x)")
VARIANT = GOOD.replace("BLOCK = 1024", "BLOCK = 256")
HOLDOUT_ONLY = "1048576"  # a holdout config's value that no public file of the task shows


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    folder = tmp_path / "recorded" / TASK.replace("/", "__")
    folder.mkdir(parents=True)
    for i, source in enumerate((WRONG, GOOD, VARIANT), 1):
        (folder / f"iter_{i}.py").write_text(source)
    return folder.parent


def replay(recorded: Path) -> dict[str, str]:
    return {"kernels": str(recorded)}


def stored(out: Path):
    with Store.open(out, create=False) as store:
        (run,) = store.runs()
        (job,) = store.jobs(run.id)
        return run, job, store.attempts(job), store.events(job)


def assert_full_final_verdict(result, out: Path) -> None:
    """Judged in full, holdout included, from outside the workspace, against the pristine task."""
    v = result.final_verdict
    assert v is not None and v.status.value == "passed" and v.holdout.correct is True
    assert Stage.HOLDOUT in {s.name for s in v.stages} and Stage.STABILITY in {s.name for s in v.stages}
    task = load_task(TASK)
    assert v.task["sha256"] == task.sha256 != public_task(task).sha256
    judged = Path(v.candidate["path"])
    assert not judged.is_relative_to(out.resolve() / "workspace") and judged.read_text() == result.best_kernel.read_text()
    assert (out / "best_kernel.py").read_text() == (out / "workspace" / "kernel.py").read_text()
    document = json.loads((out / "result.json").read_text())
    assert document["final_verdict"]["holdout"]["correct"] is True
    assert document["status"] == "passed" and document["exit_code"] == 0


# ------------------------------------------------------------------------------------ strategies


def test_single_judges_its_one_proposal_in_full(tmp_path, recorded):
    (recorded / TASK.replace("/", "__") / "iter_1.py").write_text(GOOD)
    out = tmp_path / "out"
    result = solve(TASK, SolveOptions("replay", out, agent_options=replay(recorded), strategy="single"))
    assert result.status == "passed" and result.exit_code == 0 and result.iterations == 1
    assert result.best_candidate == "c1" and result.best_kernel == out.resolve() / "best_kernel.py"
    assert_full_final_verdict(result, out)
    run, job, attempts, events = stored(out)
    assert job.status == "done" and job.strategy == "single" and run.confined
    assert [(a.iteration, a.kept, a.final) for a in attempts] == [(1, True, False), (1, False, True)]
    assert attempts[0].verdict == attempts[1].verdict  # one full verdict, not two evaluations
    assert attempts[0].verdict.holdout.correct is True
    assert [e.kind for e in events] == ["run", "start", "iteration", "stop", "final"]
    (record,) = iterations(read_trajectory(out))
    assert record["evaluation"] == "full" and record["decision"] == "answer" and record["kept"]
    assert record["verdict_full"]["stages"][-1]["name"] == "holdout"


def test_best_of_n_keeps_the_first_correct_when_nothing_is_timed(tmp_path, recorded):
    out = tmp_path / "out"
    seen: list[SolveProgress] = []
    result = solve(TASK, SolveOptions("replay", out, agent_options=replay(recorded), strategy="best-of-n", strategy_options={"n": "3"}, budget="10it", seed=7), progress=seen.append)
    assert result.status == "passed" and result.best_candidate == "c2" and result.iterations == 3
    assert result.summary == "c2: not timed: the first of 2 correct kernels"
    assert_full_final_verdict(result, out)
    records = iterations(read_trajectory(out))
    assert [r["parent"] for r in records] == ["c0", "c0", "c0"]  # independent, from the same parent
    assert [r["seed"] for r in records] == [7, 8, 9]
    assert [r["verdict"]["correct"] for r in records] == [False, True, True]
    assert [r["evaluation"] for r in records] == ["search", "search", "search"]
    assert all(r["verdict_full"]["holdout"]["correct"] is None for r in records)  # search verdicts: no holdout
    _, _, attempts, events = stored(out)
    assert [(a.iteration, a.kept, a.final) for a in attempts] == [(1, False, False), (2, True, False),
                                                                  (2, False, True), (3, False, False)]
    assert "kept" in [e.kind for e in events]
    phases = [p.phase for p in seen]
    assert phases[0] == "start" and phases[-1] == "done" and "final" in phases
    assert seen[-1].best.startswith("c2: passed") and seen[-1].budget == {"iterations": "7 of 10 left"}


def test_keep_revert_reverts_the_wrong_kernel_and_stops_on_patience(tmp_path, recorded):
    out = tmp_path / "out"
    result = solve(TASK, SolveOptions("replay", out, agent_options=replay(recorded), strategy="keep-revert", strategy_options={"patience": "2"}, budget="20it"))
    assert result.status == "passed" and result.best_candidate == "c2"
    assert result.stop.rule == "patience" and result.iterations == 4
    assert_full_final_verdict(result, out)
    records = iterations(read_trajectory(out))
    assert [(r["decision"], r["parent"]) for r in records] == [("revert", "c0"), ("keep", "c0"), ("revert", "c2"),
                                                                ("revert", "c2")]
    assert records[0]["reason"] == "incorrect (failed at smoke)"
    assert records[2]["reason"].startswith("not timed")  # the interpreter: correctness decides, speed cannot
    assert records[3]["reason"] == "no kernel: no more recorded kernels"
    _, _, attempts, _ = stored(out)
    searched = [a for a in attempts if not a.final]
    assert [(a.iteration, a.kept) for a in searched] == [(1, False), (2, True), (3, False), (4, False)]
    assert searched[0].verdict.failed_stage == "smoke" and searched[3].verdict is None
    # per-round analysis falls out of the store
    rows = iteration_table(out)
    assert [(r["iteration"], r["compile_rate"], r["correct_rate"], r["solved_so_far"]) for r in rows] == [
        (1, 1.0, 0.0, 0.0), (2, 1.0, 1.0, 1.0), (3, 1.0, 1.0, 1.0), (4, 0.0, 0.0, 1.0)]
    with Store.open(out, create=False) as store:
        assert rows == per_iteration(attempt_points_from_store(store))
        (scored,) = results_from_store(store)
    assert scored.correct and scored.holdout_correct and scored.strategy == "keep-revert"


def test_evolve_archives_correct_children_and_keeps_the_best(tmp_path, recorded):
    out = tmp_path / "out"
    options = {"generations": "2", "offspring": "2", "crossover_rate": "1"}
    result = solve(TASK, SolveOptions("replay", out, agent_options=replay(recorded), strategy="evolve", strategy_options=options))
    assert result.status == "passed" and result.best_candidate == "c2" and result.iterations == 4
    assert_full_final_verdict(result, out)
    records = iterations(read_trajectory(out))
    assert [r["decision"] for r in records] == ["reject", "archive", "archive", "reject"]
    assert records[0]["operator"].startswith("repair") and records[0]["parent"] == "c0"
    assert records[1]["improved"] and not records[2]["improved"]  # untimed: the first correct stays the best
    assert records[2]["operator"] == "mutation (generation 2)" and records[2]["parent"] == "c2"
    assert records[2]["instructions"] and records[2]["others"] == []  # one member: no crossover yet
    assert records[3]["operator"] == "crossover (generation 2)" and records[3]["instructions"].startswith("Combine")
    assert sorted([records[3]["parent"], *records[3]["others"]]) == ["c2", "c3"]  # two archive members
    assert result.stop.reason == "2 generations of 2 children made"


def test_the_search_agent_climbs_from_its_templates(tmp_path):
    out = tmp_path / "out"
    result = solve(TASK, SolveOptions("search", out, agent_options={"screen": "false"}, strategy="keep-revert", strategy_options={"patience": "2"}, budget="4it"))
    assert result.status == "passed" and result.best_candidate == "c1" and result.stop.rule == "patience"
    records = iterations(read_trajectory(out))
    assert records[0]["proposal"]["note"].startswith("template elementwise")
    assert [r["decision"] for r in records] == ["keep", "revert", "revert"]
    assert [r["parent"] for r in records] == ["c0", "c1", "c1"]


SLOW_AGENT = "sh -c 'sleep 1; echo thought for a second'"  # leaves kernel.py as it found it


def test_the_time_budget_stops_the_search_and_bounds_each_proposal(tmp_path):
    out = tmp_path / "out"
    result = solve(TASK, SolveOptions("cli", out, agent_options={"command": SLOW_AGENT, "timeout_s": "600"}, strategy="keep-revert", strategy_options={"patience": "100"}, budget="4s", confine=False))
    assert result.stop.rule == "time" and 2 <= result.iterations <= 5
    assert result.status == "failed"  # the skeleton, judged in full: the best attempt seen
    records = iterations(read_trajectory(out))
    assert records[0]["evaluation"] == "search" and records[1]["evaluation"] == "reused"
    assert {r["decision"] for r in records} == {"revert"}
    prompt = next((out / "workspace.logs").glob("cli-001.prompt.md")).read_text()
    assert re.search(r"You have [34] seconds", prompt)  # the proposal's deadline is the time left


# ------------------------------------------------------------------------------------ the verifier


def verifier_reply(request: RecordedRequest) -> Turn:
    """A stand-in judge: a kernel that scales negative inputs is predicted incorrect."""
    text = request.last_user_text() or ""
    wrong = "0.5 * x" in text
    answer = {"correct": not wrong, "confidence": 0.9, "reason": "negatives leak" if wrong else "looks right"}
    return Turn.say(json.dumps(answer), tokens_in=1000, tokens_out=20)


def verifier_options(server: ScriptedModelServer, **more: str) -> dict[str, str]:
    return {"verifier_model": "gpt-4o-mini", "verifier_base_url": server.openai_base_url, **more}


def test_evolve_with_the_verifier_skips_a_kernel_it_predicts_incorrect(tmp_path, recorded):
    out = tmp_path / "out"
    with ScriptedModelServer([verifier_reply] * 10) as server:
        options = {"generations": "1", "offspring": "3", **verifier_options(server)}
        result = solve(TASK, SolveOptions("replay", out, agent_options=replay(recorded), strategy="evolve", strategy_options=options))
        requests = server.model_requests
    assert result.status == "passed" and result.best_candidate == "c2"
    assert len(requests) == 3 and all(r.body["model"] == "gpt-4o-mini" and "tools" not in r.body for r in requests)
    assert "ModelNew" in requests[0].last_user_text() and "class Model" in requests[0].last_user_text()
    assert not any(HOLDOUT_ONLY in r.raw.decode() for r in requests)  # it sees public information only
    records = iterations(read_trajectory(out))
    first = records[0]
    assert first["skipped"] == "the verifier predicted it incorrect (negatives leak)"
    assert first["verdict"] is None and first["evaluation"] is None and first["decision"] == "reject"
    assert first["verifier"]["predicted_correct"] is False and first["verifier"]["tokens_in"] == 1000
    assert [r["verifier"]["predicted_correct"] for r in records] == [False, True, True]
    pr = precision_recall(records)
    assert (pr["tp"], pr["fp"], pr["fn"], pr["tn"], pr["unverified"], pr["skipped"]) == (2, 0, 0, 0, 1, 1)
    assert pr["precision"] == 1.0 and pr["recall"] == 1.0 and pr["skip_precision"] is None
    assert result.verifier_usage.tokens_in == 3000 and result.verifier_usage.cost_usd > 0
    _, _, attempts, events = stored(out)
    assert attempts[0].verdict is None and attempts[0].usage.tokens_in == 1000  # the verifier's cost is charged
    assert precision_recall([e.payload for e in events if e.kind == "iteration"]) == pr  # the store says the same


def test_an_audit_runs_predicted_incorrect_kernels_anyway_so_the_verifier_can_be_measured(tmp_path, recorded):
    out = tmp_path / "out"
    with ScriptedModelServer([verifier_reply] * 10) as server:
        options = {"patience": "2", **verifier_options(server, verifier_audit="1")}
        result = solve(TASK, SolveOptions("replay", out, agent_options=replay(recorded), strategy="keep-revert", strategy_options=options, budget="3it"))
    assert result.status == "passed"
    pr = precision_recall(read_trajectory(out))
    assert (pr["tp"], pr["fp"], pr["fn"], pr["tn"], pr["skipped"]) == (2, 0, 0, 1, 0)
    assert pr["skip_precision"] == 1.0 and pr["accuracy"] == 1.0


# ------------------------------------------------------------------------------------ model and CLI agents


def test_the_api_agent_is_told_why_it_was_reverted_and_checks_through_the_service(tmp_path, monkeypatch):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    script = [Turn.tool("write_kernel", {"source": WRONG}, tokens_in=900, tokens_out=400),  # proposal 1
              Turn.tool("finish", {"summary": "a first try"}, tokens_in=1000, tokens_out=8),
              Turn.tool("write_kernel", {"source": GOOD}, tokens_in=900, tokens_out=400),  # proposal 2
              Turn.tool("run_check", {}, tokens_in=1500, tokens_out=5),
              Turn.tool("finish", {"summary": "one Triton kernel each way"}, tokens_in=2000, tokens_out=8)]
    out = tmp_path / "out"
    with ScriptedModelServer(script) as server:
        result = solve(TASK, SolveOptions("api", out, agent_options={"model": "gpt-4o-mini", "base_url": server.openai_base_url, "backoff_s": "0.01"}, strategy="keep-revert", budget="$0.001"))
        requests = server.model_requests
    assert result.status == "passed" and result.confined and result.best_candidate == "c2"
    assert result.stop.rule == "cost" and result.iterations == 2  # $0.00053, then $0.00144 >= $0.001
    assert len(requests) == 5
    assert "Feedback" not in requests[0].last_user_text()  # a skeleton to start from: nothing was judged
    told = requests[2].last_user_text()  # the first turn of proposal 2
    assert "check elementwise/relu: FAILED at smoke" in told
    assert "This attempt was reverted (incorrect (failed at smoke)); kernel.py is back to the kept kernel." in told
    assert "\ncheck elementwise/relu: PASSED (interpret" in requests[4].tool_results()[-1]  # ./check asked the service
    first, second = iterations(read_trajectory(out))
    assert first["checks"] == [] and [c["status"] for c in second["checks"]] == ["passed"]
    assert second["proposal"]["note"] == "one Triton kernel each way"
    assert second["usage"]["tokens_in"] == 4400 and second["usage"]["steps"] == 3
    assert 0 < result.cost_usd < 0.01 and result.usage.cost_usd == pytest.approx(result.cost_usd)
    assert result.usage.tokens_in == 6300
    _, _, attempts, _ = stored(out)
    assert [a.usage.tokens_out for a in attempts if not a.final] == [408, 413]
    assert json.loads((out / "result.json").read_text())["usage"]["agent"]["tokens_in"] == 6300


CLI_AGENT = "sh -c './check > check.txt 2>&1; printf %s \"$KERNEL\" > kernel.py; echo wrote kernel.py'"


@pytest.mark.parametrize("bwrap", ["bwrap", "kernellab-no-such-bwrap"])
def test_a_cli_agent_is_confined_or_the_run_is_marked_unconfined(tmp_path, bwrap):
    probe = probe_confinement(bwrap)
    if bwrap == "bwrap" and not probe.available:
        pytest.skip(f"no confinement here: {probe.detail}")
    out = tmp_path / "out"
    result = solve(TASK, SolveOptions("cli", out, agent_options={"command": CLI_AGENT, "env": {"KERNEL": GOOD}, "timeout_s": "120"}, strategy="single", probe=probe))
    assert result.status == "passed"
    assert result.confined is probe.available
    check_output = (out / "workspace" / "check.txt").read_text()
    assert check_output.startswith("check elementwise/relu: ")  # answered by the service, confined or not
    (record,) = iterations(read_trajectory(out))
    assert record["confined"] is probe.available and record["proposal"]["note"] == "wrote kernel.py"
    assert len(record["checks"]) == 1
    run, _, _, _ = stored(out)
    assert run.confined is probe.available and run.config["confinement"]["confined"] is probe.available
    document = json.loads((out / "result.json").read_text())
    assert document["confined"] is probe.available
    header = read_trajectory(out)[0]
    assert header["kind"] == "run" and header["confinement"]["confined"] is probe.available
    if not probe.available:
        assert "kernellab-no-such-bwrap not found" in document["confinement"]["reason"]


# ------------------------------------------------------------------------------------ interruption and resume


def test_ctrl_c_keeps_what_was_recorded_and_resume_continues(tmp_path, recorded):
    out = tmp_path / "out"

    def interrupt_after_two(p: SolveProgress) -> None:
        if p.phase == "iteration" and p.iteration == 2:
            raise KeyboardInterrupt

    result = solve(TASK, SolveOptions("replay", out, agent_options=replay(recorded), strategy="keep-revert", strategy_options={"patience": "2"}, budget="20it"), progress=interrupt_after_two)
    assert result.status == "interrupted" and result.exit_code == 130 and result.final_verdict is None
    assert result.best_candidate == "c2" and (out / "best_kernel.py").read_text() == GOOD
    _, job, attempts, events = stored(out)
    assert job.status == "pending" and [a.iteration for a in attempts] == [1, 2] and attempts[1].kept
    assert events[-1].kind == "interrupted"
    assert json.loads((out / "result.json").read_text())["status"] == "interrupted"

    with pytest.raises(SolveError, match="already holds a solve"):
        solve(TASK, SolveOptions("replay", out, agent_options=replay(recorded), strategy="keep-revert", strategy_options={"patience": "2"}, budget="20it"))
    with pytest.raises(SolveError, match="another strategy_options"):
        solve(TASK, SolveOptions("replay", out, agent_options=replay(recorded), strategy="keep-revert", strategy_options={"patience": "3"}, budget="20it", resume=True))

    resumed = solve(TASK, SolveOptions("replay", out, agent_options=replay(recorded), strategy="keep-revert", strategy_options={"patience": "2"}, budget="20it", resume=True))
    assert resumed.status == "passed" and resumed.best_candidate == "c2"
    _, job, attempts, events = stored(out)
    assert job.status == "done" and job.tries == 2
    assert job.worker is None and job.worker_pid is None  # a solve records its job; it claims none
    assert [a.iteration for a in attempts if not a.final] == [1, 2, 3, 4]  # nothing recorded twice
    kinds = [e.kind for e in events]
    assert kinds.count("start") == 1 and "resume" in kinds and kinds[-1] == "final"
    lines = read_trajectory(out)
    assert [r["iteration"] for r in lines if r["kind"] == "replayed"] == [1, 2]
    with pytest.raises(SolveError, match="is finished"):
        solve(TASK, SolveOptions("replay", out, agent_options=replay(recorded), strategy="keep-revert", strategy_options={"patience": "2"}, budget="20it", resume=True))


def test_an_output_folder_in_use_or_a_bad_option_writes_nothing(tmp_path, recorded):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(SolveError, match="is not empty"):
        solve(TASK, SolveOptions("replay", busy, agent_options=replay(recorded), strategy="single"))
    from kernellab.agents.base import AgentError

    fresh = tmp_path / "fresh"
    with pytest.raises(AgentError, match="unknown option 'model'"):
        solve(TASK, SolveOptions("replay", fresh, agent_options={**replay(recorded), "model": "x"}, strategy="single"))
    with pytest.raises(AgentError, match="unknown strategy"):
        solve(TASK, SolveOptions("replay", fresh, agent_options=replay(recorded), strategy="greedy"))
    with pytest.raises(AgentError, match="--budget"):
        solve(TASK, SolveOptions("replay", fresh, agent_options=replay(recorded), strategy="single", budget="soon"))
    assert not fresh.exists()


def test_an_agent_that_produces_nothing_ends_without_a_candidate(tmp_path):
    empty = tmp_path / "empty"
    (empty / TASK.replace("/", "__")).mkdir(parents=True)
    out = tmp_path / "out"
    result = solve(TASK, SolveOptions("replay", out, agent_options={"kernels": str(empty)}, strategy="keep-revert", budget="2it"))
    assert result.status == "no_candidate" and result.exit_code == 1 and result.final_verdict is None
    assert result.stop.rule == "iterations" and not (out / "best_kernel.py").exists()
    with sqlite3.connect(out / "results.sqlite") as db:
        assert db.execute("SELECT count(*) FROM attempts").fetchone()[0] == 2
    with Store.open(out, create=False) as store:
        (scored,) = results_from_store(store)
    assert scored.status == "no_candidate"
