"""The adversarial corpus is well formed: fixture tasks load, candidates parse and follow the
KernelBench convention, and every manifest entry points at real files with valid expectations.

This does not evaluate any candidate (that is ``test_corpus.py``, through ``EvalSession``).
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

from kernellab.evaluate.verdict import Stage, Status, ViolationKind
from kernellab.tasks.load import load_task
from kernellab.tasks.model import Visibility

HERE = Path(__file__).parent
TASKS = HERE / "tasks"
DEGENERATE = HERE / "degenerate_tasks"
CANDIDATES = HERE / "candidates"
MANIFEST = tomllib.loads((HERE / "manifest.toml").read_text())["case"]

CASE_KEYS = {"kind", "task", "candidate", "expect", "violation", "also_ok", "status", "stage", "gpu_only",
             "holdout_only", "cpu_status", "threat", "why", "reason", "input", "open", "open_cpu",
             "open_gpu", "at_margin", "neutralised_below", "sanitize"}
VIOLATIONS = {v.value for v in ViolationKind}
STATUSES = {s.value for s in Status}
STAGES = {s.value for s in Stage}
DEGENERATE_REASONS = {"near_constant_output", "input_independent"}
SMALL_ELEMENTS = 1 << 16  # per input tensor: keeps every small config well under a second interpreted

CANDIDATE_CASES = [c for c in MANIFEST if c.get("kind", "candidate") == "candidate"]
DEGENERATE_CASES = [c for c in MANIFEST if c.get("kind") == "degenerate_task"]
TASK_DIRS = sorted(p for p in TASKS.iterdir() if p.is_dir())
DEGENERATE_DIRS = sorted(p for p in DEGENERATE.iterdir() if p.is_dir())
CANDIDATE_FILES = sorted(CANDIDATES.glob("*/*.py"))


def _case_id(case: dict) -> str:
    return case.get("candidate") or f"degenerate:{case['task']}"


def _signature(tree: ast.Module, class_name: str) -> dict[str, list[str]]:
    """Argument names (without self) of ``__init__`` and ``forward`` of ``class_name``."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            return {f.name: [a.arg for a in f.args.args[1:]] for f in node.body
                    if isinstance(f, ast.FunctionDef) and f.name in ("__init__", "forward")}
    raise AssertionError(f"no class {class_name}")


# --- fixture tasks -----------------------------------------------------------------------------

@pytest.mark.parametrize("folder", TASK_DIRS + DEGENERATE_DIRS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_task_loads_with_small_configs(folder: Path) -> None:
    task = load_task(folder)
    small = task.configs_of(Visibility.SMALL)
    assert small, "every fixture task needs a small config (the interpreter runs only those)"
    if folder.parent == TASKS:
        for visibility in (Visibility.SEEN, Visibility.EDGE, Visibility.HOLDOUT):
            assert task.configs_of(visibility), f"no {visibility.value} configs"

    from kernellab.tasks.materialize import load_problem

    for config in small:
        problem = load_problem(task, config)
        for value in problem.inputs(seed=0, device="cpu", dtype=task.dtypes[0]):
            assert value.numel() <= SMALL_ELEMENTS, f"small config {config.label} is not small"


# --- candidates ----------------------------------------------------------------------------------

@pytest.mark.parametrize("path", CANDIDATE_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_candidate_parses_and_matches_reference_signature(path: Path) -> None:
    source = path.read_text()
    tree = ast.parse(source, filename=str(path))
    docstring = ast.get_docstring(tree)
    assert docstring, "each case starts with a docstring: the exploit it attempts and why it must be caught"
    assert docstring.startswith(("LEGITIMATE", "EXPLOIT", "CONTRACT BREACH")), docstring.splitlines()[0]
    reference = ast.parse((TASKS / path.parent.name / "reference.py").read_text())
    assert _signature(tree, "ModelNew") == _signature(reference, "Model")
    # Allocation follows the inputs' device, so the same file runs under the interpreter on CPU.
    assert not re.search(r"""device\s*=\s*["']cuda|\.cuda\(\)""", source), "hard-coded CUDA device"


def test_every_candidate_file_is_in_the_manifest_once() -> None:
    listed = [c["candidate"] for c in CANDIDATE_CASES]
    assert len(listed) == len(set(listed)), "a candidate is listed twice"
    on_disk = {p.relative_to(CANDIDATES).as_posix() for p in CANDIDATE_FILES}
    assert set(listed) == on_disk


# --- manifest ------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", MANIFEST, ids=_case_id)
def test_manifest_entry_is_valid(case: dict) -> None:
    assert set(case) <= CASE_KEYS, f"unknown keys {sorted(set(case) - CASE_KEYS)}"
    assert case["expect"] in ("accept", "reject")
    assert isinstance(case["threat"], int) and 0 <= case["threat"] <= 14  # the rows of ARCHITECTURE.md's table
    assert isinstance(case.get("why"), str) and case["why"]
    for key in ("gpu_only", "holdout_only"):
        assert isinstance(case.get(key, False), bool)
    if case.get("kind", "candidate") == "degenerate_task":
        _check_degenerate(case)
    else:
        _check_candidate(case)


def _check_candidate(case: dict) -> None:
    assert case.get("kind", "candidate") == "candidate"
    assert (TASKS / case["task"] / "reference.py").is_file(), f"no fixture task {case['task']!r}"
    assert (CANDIDATES / case["candidate"]).is_file()
    assert case["candidate"].split("/")[0] == case["task"], "candidates live under their task's folder"
    for status in [case.get("status", "passed")] + case.get("cpu_status", []):
        assert status in STATUSES, status
    if "stage" in case:
        assert case["stage"] in STAGES, case["stage"]
    docstring = ast.get_docstring(ast.parse((CANDIDATES / case["candidate"]).read_text()))
    if case["expect"] == "accept":
        assert not {"violation", "also_ok", "stage", "holdout_only"} & set(case), "an accepted case expects nothing else"
        assert case.get("status", "passed") == "passed"
        assert docstring.startswith("LEGITIMATE")
        if case.get("gpu_only"):
            assert case.get("cpu_status"), "say what a machine without a GPU must answer"
        return
    assert not docstring.startswith("LEGITIMATE")
    if case["threat"]:
        assert f"threat {case['threat']}" in docstring, "the docstring names the threat class"
    if case.get("holdout_only"):
        assert case.get("status") == "passed", "seen configs pass: the holdout alone fails"
        assert "violation" not in case and "stage" not in case
        return
    assert "violation" in case, "a rejection states its violation kind, or \"\" for a correctness failure"
    assert case["violation"] in VIOLATIONS | {""}, case["violation"]
    for alternative in case.get("also_ok", []):
        assert alternative in VIOLATIONS | {"failed"}, alternative
    assert case.get("status", "failed") == "failed"


def _check_degenerate(case: dict) -> None:
    folder = DEGENERATE / case["task"]
    assert (folder / "reference.py").is_file(), f"no degenerate task {case['task']!r}"
    assert case["expect"] == "reject" and case["threat"] == 12
    assert case["reason"] in DEGENERATE_REASONS
    if case["reason"] == "input_independent":
        forward = _signature(ast.parse((folder / "reference.py").read_text()), "Model")["forward"]
        assert case.get("input") in forward, "name the input the output does not depend on"
    assert not {"candidate", "violation", "stage", "also_ok"} & set(case)


def test_every_threat_class_has_a_rejection_and_most_show_without_a_gpu() -> None:
    rejected = {c["threat"] for c in CANDIDATE_CASES if c["expect"] == "reject"}
    cpu_showable = {c["threat"] for c in CANDIDATE_CASES
                    if c["expect"] == "reject" and not c.get("gpu_only", False)}
    assert set(range(1, 12)) <= rejected
    assert set(range(1, 12)) <= cpu_showable
    assert DEGENERATE_CASES, "threat 12 (degenerate tasks) needs a fixture task"
    assert {c["task"] for c in DEGENERATE_CASES} == {p.name for p in DEGENERATE_DIRS}


def test_legitimate_cases_cover_the_false_positive_guards() -> None:
    accepted = {Path(c["candidate"]).stem for c in CANDIDATE_CASES if c["expect"] == "accept"}
    # views, fully written empty outputs, autotune, optional import, declared mutation, multi-pass
    # with helpers, persistent loop: patterns a strict evaluator must not mistake for exploits.
    assert {"views_and_reshape", "single_block", "autotuned", "optional_import", "fused_inplace",
            "two_pass_blocked", "persistent_rows"} <= accepted
