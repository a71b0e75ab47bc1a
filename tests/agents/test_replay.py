"""The replay agent: recorded kernels proposed in order, in each layout it reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernellab.agents.base import AgentError, ProposalRequest, create_agent, registered
from kernellab.agents.workspace import build_workspace
from kernellab.evaluate.options import EvalOptions
from kernellab.evaluate.session import EvalSession
from kernellab.tasks.load import load_task

ROOT = Path(__file__).parents[2]
VECTOR_ADD = ROOT / "tests" / "adversarial" / "tasks" / "vector_add"
GOOD = ROOT / "tests" / "adversarial" / "candidates" / "vector_add" / "masked_add.py"


def request(task_id: str, iteration: int = 0) -> ProposalRequest:
    return ProposalRequest(workspace=Path("/nonexistent"), task_id=task_id, iteration=iteration, parent="")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_replay_is_registered_without_an_llm():
    cls = registered()["replay"]
    assert cls.uses_llm is False and cls.availability().usable


def test_iterations_are_proposed_in_numeric_order_then_it_says_there_are_no_more(tmp_path):
    for i in (10, 2, 1):
        write(tmp_path / "normalization" / "rmsnorm" / f"iter_{i}.py", f"# iteration {i}\n")
    write(tmp_path / "normalization" / "rmsnorm" / "notes.txt", "not a kernel")
    agent = create_agent("replay", kernels=str(tmp_path))
    sources = [agent.propose(request("normalization/rmsnorm", i)).source for i in range(3)]
    assert sources == ["# iteration 1\n", "# iteration 2\n", "# iteration 10\n"]
    last = agent.propose(request("normalization/rmsnorm", 3))
    assert last.source is None and last.note == "no more recorded kernels"
    assert last.usage.cost_usd == 0.0 and last.usage.tokens_in is None


@pytest.mark.parametrize("layout", ["normalization__rmsnorm.py", "normalization/rmsnorm.py",
                                    "normalization/rmsnorm/kernel.py", "normalization__rmsnorm/kernel.py"])
def test_one_kernel_per_task_in_each_layout(tmp_path, layout):
    write(tmp_path / layout, "# the kernel\n")
    agent = create_agent("replay", kernels=tmp_path)
    first = agent.propose(request("normalization/rmsnorm"))
    assert first.source == "# the kernel\n" and "1/1" in first.note
    assert agent.propose(request("normalization/rmsnorm")).source is None
    missing = agent.propose(request("softmax/softmax"))
    assert missing.source is None and "no recorded kernel for softmax/softmax" in missing.note


def test_a_single_file_is_the_kernel_of_every_task(tmp_path):
    path = write(tmp_path / "kernel.py", "# one\n")
    agent = create_agent("replay", kernels=path)
    assert agent.propose(request("a/b")).source == "# one\n"
    assert agent.propose(request("c/d")).source == "# one\n"  # each task gets it once
    assert agent.propose(request("a/b")).source is None


def test_bad_options_are_one_line_agent_errors(tmp_path):
    with pytest.raises(AgentError, match="replay needs kernels="):
        create_agent("replay")
    with pytest.raises(AgentError, match="does not exist"):
        create_agent("replay", kernels=tmp_path / "missing")
    with pytest.raises(AgentError, match="unknown option 'model'"):
        create_agent("replay", kernels=tmp_path, model="gpt")


def test_replayed_kernels_are_rescored_by_the_evaluator(tmp_path):
    """Re-scoring: a recorded kernel, written to a workspace, judged against the pristine task."""
    task = load_task(VECTOR_ADD)
    write(tmp_path / "kernels" / f"{task.id}.py", GOOD.read_text())
    agent = create_agent("replay", kernels=tmp_path / "kernels")
    proposal = agent.propose(request(task.id))
    ws = build_workspace(task, tmp_path / "ws", proposal.source)
    with EvalSession(task, EvalOptions(trials=1)) as session:
        verdict = session.evaluate(ws.kernel_path)
    assert verdict.status.value == "passed" and verdict.holdout.correct in (True, None)
