"""Agent workspaces: what they hold, what they never hold (holdout configs), and the workspace task."""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import re
from pathlib import Path

import pytest

from kernellab.agents.check_service import CHECK_SCRIPT
from kernellab.agents.workspace import (
    WorkspaceError,
    build_workspace,
    find_workspace,
    load_workspace,
    public_task,
    skeleton,
    task_markdown,
)
from kernellab.tasks.catalog import suite_tasks
from kernellab.tasks.load import load_task
from kernellab.tasks.materialize import build_model, load_problem
from kernellab.tasks.model import Visibility

ROOT = Path(__file__).parents[2]
VECTOR_ADD = ROOT / "tests" / "adversarial" / "tasks" / "vector_add"
KERNELBENCH_FILE = ROOT / "tests" / "data" / "kernelbench_cross_entropy.py"


def test_a_workspace_holds_the_task_the_reference_a_kernel_and_check(tmp_path):
    task = load_task("normalization/rmsnorm")
    ws = build_workspace(task, tmp_path / "ws")
    names = sorted(p.relative_to(ws.path).as_posix() for p in ws.path.rglob("*") if p.is_file())
    assert names == [".kernellab/task/reference.py", ".kernellab/task/task.toml", ".kernellab/workspace.json",
                     "TASK.md", "check", "kernel.py", "reference.py"]
    assert (ws.path / "reference.py").read_text() == task.source
    assert os.access(ws.path / "check", os.X_OK)
    assert ws.task_id == "normalization/rmsnorm" and ws.language == "triton" and ws.kernel_origin == "skeleton"
    manifest = json.loads((ws.state_dir / "workspace.json").read_text())
    assert manifest["task_id"] == task.id and manifest["task_path"] == ".kernellab/task"
    text = (ws.path / "TASK.md").read_text()
    for config in task.configs_of(Visibility.SEEN, Visibility.EDGE, Visibility.SMALL):
        row = " | ".join(str(v) for v in config.as_dict().values())
        assert row in text, f"{config.label} is not in TASK.md"
    assert "Held-out configurations exist" in text and "./check" in text and "Playbook: Triton" in text
    assert "`own_compute_only`" in text  # the scan's rules of the task's policy, with their reasons
    assert task.source.strip() in text


def test_the_workspace_task_judges_like_the_task_without_its_holdout(tmp_path):
    task = load_task("normalization/rmsnorm")
    ws = build_workspace(task, tmp_path / "ws")
    copy = ws.task()
    assert copy.id == task.id
    assert copy.sha256 == public_task(task).sha256 != task.sha256
    assert copy.configs_of(Visibility.HOLDOUT) == []
    assert copy.configs_of(Visibility.SEEN, Visibility.EDGE, Visibility.SMALL) == \
        task.configs_of(Visibility.SEEN, Visibility.EDGE, Visibility.SMALL)


def _public_words(task) -> set[str]:
    """Words a workspace may hold whatever the holdout: the task's public text and TASK.md's own wording."""
    wording = task_markdown(dataclasses.replace(task, configs=()), "triton", has_baseline=False) + \
        task_markdown(dataclasses.replace(task, configs=()), "cuda", has_baseline=True)
    words = set(re.findall(r"[\w.]+", f"{task.source} {task.baseline_source or ''} {task.description} {wording}"))
    for config in task.configs_of(Visibility.SEEN, Visibility.EDGE, Visibility.SMALL):
        words |= {str(v) for v in config.as_dict().values()}
    return words


def test_no_holdout_value_is_readable_anywhere_in_any_suite_workspace(tmp_path):
    """For every suite task: every holdout value that is not public anyway (a seen, edge or small
    value, a word of the reference, baseline, description or of TASK.md's fixed wording) appears in no
    file of the workspace, hidden files included. Single digits are too common to tell anything."""
    checked = 0
    for i, task in enumerate(suite_tasks()):
        ws = build_workspace(task, tmp_path / f"ws{i}")
        # ./check is the same file in every workspace: it carries nothing of any task
        assert (ws.path / "check").read_text() == CHECK_SCRIPT
        texts = {p: p.read_text() for p in ws.path.rglob("*") if p.is_file() and p.name != "check"}
        public = _public_words(task)
        for config in task.configs_of(Visibility.HOLDOUT):
            secret = [str(v) for v in config.as_dict().values()
                      if str(v) not in public and not (isinstance(v, int) and -10 < v < 10)]
            for value in secret:
                pattern = re.compile(rf"(?<![\w.]){re.escape(value)}(?![\w.])")
                for path, text in texts.items():
                    assert not pattern.search(text), f"{task.id}: holdout value {value} ({config.label}) in {path}"
                checked += 1
            assert config.label not in "".join(texts.values())
    assert checked > 100  # the suite has many holdout values that appear nowhere public


def test_a_given_kernel_or_the_baseline_becomes_kernel_py(tmp_path):
    task = load_task("attention/gqa_decode")  # a CUDA C++ baseline
    ws = build_workspace(task, tmp_path / "baseline")
    assert ws.kernel_path.read_text() == task.baseline_source
    assert ws.kernel_origin == "baseline" and ws.language == "cuda"
    assert (ws.task_path / "baseline.py").read_text() == task.baseline_source
    assert "Playbook: CUDA C++" in (ws.path / "TASK.md").read_text()
    given = build_workspace(task, tmp_path / "given", kernel_source="# a triton kernel\n")
    assert given.kernel_path.read_text() == "# a triton kernel\n" and given.language == "triton"
    assert given.kernel_origin == "given"


def test_skeletons_keep_the_reference_signatures_and_parameters_for_every_suite_task(tmp_path):
    """A skeleton imports, instantiates with the reference's init inputs, holds the same state names
    (so the judge can copy the weights in), and its forward says it is not written yet."""
    tasks = [t for t in suite_tasks() if not t.baseline_source]
    assert len(tasks) > 50
    for task in tasks:
        for backend in ("triton", "cuda"):
            source = skeleton(task, backend)
            namespace: dict = {}
            exec(compile(source, f"{task.id}/kernel.py", "exec"), namespace)  # noqa: S102 - our own skeleton
            config = (task.configs_of(Visibility.SMALL) or task.configs_of(Visibility.SEEN))[0]
            problem = load_problem(task, config)
            model = build_model(namespace["ModelNew"], problem.init_inputs(), 0)
            reference = build_model(problem.module.Model, problem.init_inputs(), 0)
            assert set(model.state_dict()) == set(reference.state_dict()), task.id
            inputs = problem.inputs(0, "cpu", "float32")
            with pytest.raises(NotImplementedError, match="not written yet"):
                model(*inputs)
        forward = next(n for n in ast.walk(ast.parse(task.source)) if isinstance(n, ast.FunctionDef)
                       and n.name == "forward")
        assert f"def forward({ast.unparse(forward.args)}):" in skeleton(task, "triton")


def test_a_kernelbench_file_task_keeps_its_own_constants(tmp_path):
    task = load_task(KERNELBENCH_FILE)
    ws = build_workspace(task, tmp_path / "ws")
    assert ws.task_path == (ws.state_dir / "task" / f"{task.id}.py").resolve()
    copy = ws.task()
    assert copy.sha256 == task.sha256 and copy.kernelbench and copy.id == task.id


def test_find_workspace_from_inside_and_errors_in_one_line(tmp_path):
    ws = build_workspace(load_task(VECTOR_ADD), tmp_path / "ws")
    (ws.path / "notes").mkdir()
    assert find_workspace(ws.path / "notes") == ws == load_workspace(ws.path)
    with pytest.raises(WorkspaceError, match="not inside a kernellab workspace"):
        find_workspace(tmp_path)
    with pytest.raises(WorkspaceError, match="already exists and is not an empty folder"):
        build_workspace(load_task(VECTOR_ADD), ws.path)
    with pytest.raises(WorkspaceError, match="language 'hip' is not one of triton, cuda"):
        build_workspace(load_task(VECTOR_ADD), tmp_path / "other", language="hip")
    (ws.state_dir / "workspace.json").write_text("{")
    with pytest.raises(WorkspaceError, match="not a readable workspace manifest") as info:
        load_workspace(ws.path)
    assert "\n" not in str(info.value)


