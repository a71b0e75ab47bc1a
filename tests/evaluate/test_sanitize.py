"""The sanitize stage: compute-sanitizer memcheck, racecheck and initcheck on small and edge configs.

CPU tests: the stage is in the verdict and skipped with its reason without a GPU; the option turns it
off; the sanitized processes get a scrubbed environment with torch's caching allocator off, their
own folder and process group, and a time limit; what the tool says about itself (absent, refusing
the device, never reaching the candidate) is a note, never the candidate's failure; what it reports
about kernels becomes violations. Stand-in executables play the tool there (a GPU is needed for the
real one); everything of kernellab's own runs for real.

GPU tests (``-m gpu``): real compute-sanitizer on real candidates from the adversarial corpus.
"""

from __future__ import annotations

import os
import stat
import textwrap
import time
from pathlib import Path

import pytest

from kernellab.evaluate.options import EvalOptions, resolve, with_stages
from kernellab.evaluate.pipeline import EvalContext
from kernellab.evaluate.session import EvalSession
from kernellab.evaluate.stages import sanitize
from kernellab.evaluate.verdict import Mode, Stage, Verdict
from kernellab.sandbox.sanitizer import OVERRIDE, SanitizeJob, find_sanitizer, run_sanitizers
from kernellab.tasks.load import load_task
from kernellab.tasks.materialize import reference_file
from kernellab.tasks.model import Visibility

ADVERSARIAL = Path(__file__).parents[1] / "adversarial"
VECTOR_ADD = ADVERSARIAL / "tasks" / "vector_add"
CANDIDATES = ADVERSARIAL / "candidates" / "vector_add"
ROOT = Path(__file__).parents[2]


def _job(task_dir: Path = VECTOR_ADD, candidate: Path = CANDIDATES / "masked_add.py") -> SanitizeJob:
    task = load_task(task_dir)
    return SanitizeJob(candidate=candidate, source=task.source, where=str(reference_file(task)),
                       items=sanitize.items(task, task.dtypes))


def _context(tmp_path: Path) -> EvalContext:
    verdict = Verdict(task={"id": "vector_add", "sha256": ""}, candidate={"path": "c.py", "sha256": ""},
                      device="test", mode=Mode.GPU, versions={}, policy="strict", seed=0)
    return EvalContext(session=None, path=tmp_path / "c.py", source="", verdict=verdict)


def _tool(tmp_path: Path, body: str) -> str:
    """A stand-in for the compute-sanitizer executable: a shell script that gets its arguments."""
    path = tmp_path / "fake-compute-sanitizer"
    path.write_text("#!/bin/bash\n" + textwrap.dedent(body))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


# What every stand-in does first: find --log-file and the target command after it.
_ARGS = """\
while [ $# -gt 0 ] && [ "$1" != "--log-file" ]; do shift; done
log="$2"; shift 2
"""


def _gone(pid: int, wait_s: float = 5.0) -> bool:
    """The process has exited (or is a zombie waiting to be reaped by whoever adopted it)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


# ---------------------------------------------------------------------------------------------- CPU


def test_items_cover_small_and_edge_configs_in_every_dtype_and_backward_apart():
    task = load_task(VECTOR_ADD)
    calls = sanitize.items(task, ("float32", "float16"))
    configs = task.configs_of(Visibility.SMALL) + task.configs_of(Visibility.EDGE)
    assert len(configs) == 3
    assert [(c["label"], c["dtype"]) for c in calls] == [(c.label, d) for c in configs for d in ("float32", "float16")]
    assert all(c["grad_inputs"] is None for c in calls)  # vector_add has no backward
    smallest_first = sanitize.items(task, ("float32",), size=lambda config: -config.as_dict()["N"])
    assert [c["label"] for c in smallest_first] == ["N=4097", "N=1000", "N=1"]  # ordered by the given size
    rmsnorm = load_task("normalization/rmsnorm")
    both = sanitize.items(rmsnorm, ("float32",))
    assert [c["grad_inputs"] for c in both[:2]] == [None, ["x"]]  # forward alone, then forward+backward


def test_without_a_gpu_the_stage_is_in_the_verdict_skipped_with_the_reason():
    options = with_stages(EvalOptions(device="cpu", request_timeout_s=60), Stage.SMOKE, Stage.SANITIZE)
    with EvalSession(load_task(VECTOR_ADD), options) as session:
        verdict = session.evaluate(CANDIDATES / "masked_add.py")
    stages = {s.name.value: s for s in verdict.stages}
    assert verdict.status.value == "passed" and verdict.correct
    assert stages["sanitize"].passed and stages["sanitize"].skipped.startswith("no GPU")


def test_the_option_turns_the_stage_off_and_search_loops_do():
    task = load_task(VECTOR_ADD)
    assert resolve(task, EvalOptions(device="cpu"), False).wants(Stage.SANITIZE)
    assert not resolve(task, EvalOptions(device="cpu", sanitize=False), False).wants(Stage.SANITIZE)
    from kernellab.agents.search.screen import screening_options
    from kernellab.agents.strategies.evaluation import final_options, search_options

    assert not resolve(task, screening_options(task), False).wants(Stage.SANITIZE)
    assert not resolve(task, search_options(EvalOptions(device="cpu")), False).wants(Stage.SANITIZE)
    assert resolve(task, final_options(EvalOptions()), False).wants(Stage.SANITIZE)  # the final verdict runs it


def test_a_missing_tool_is_a_note_and_the_stage_passes(tmp_path, monkeypatch):
    monkeypatch.setenv(OVERRIDE, "none")
    assert find_sanitizer() is None
    runs = run_sanitizers(_job(), {"PATH": os.environ["PATH"]}, tmp_path, 30)
    assert [r.outcome for r in runs] == ["tool_failure"] * 3
    ctx = _context(tmp_path)
    result = sanitize.judge(ctx, runs, 9)
    assert result.passed and not ctx.verdict.violations
    assert "not found" in result.skipped and any("not found" in n for n in ctx.verdict.notes)


def test_the_tool_refusing_the_device_is_never_the_candidates_failure(tmp_path):
    # What compute-sanitizer answered on a gVisor H200 (KINDS.md): it refuses and the target never runs.
    tool = _tool(tmp_path, _ARGS + 'echo "========= Error: Device not supported." > "$log"\nexit 1\n')
    runs = run_sanitizers(_job(), {"PATH": os.environ["PATH"]}, tmp_path / "runs", 30, executable=tool)
    assert [r.outcome for r in runs] == ["tool_failure"] * 3
    assert "Device not supported" in runs[0].describe()
    ctx = _context(tmp_path)
    result = sanitize.judge(ctx, runs, 9)
    assert result.passed and "Device not supported" in result.skipped


def test_the_sanitized_process_gets_a_scrubbed_environment_without_the_caching_allocator(tmp_path, monkeypatch):
    # The stand-in runs the real target without instrumenting it. Here there is no CUDA, so the
    # target stops before it imports the candidate: a setup failure, the harness's, not the candidate's.
    monkeypatch.setenv("KERNELLAB_SECRET_IN_THE_JUDGE", "do-not-leak")
    tool = _tool(tmp_path, _ARGS + 'env > "$(dirname "$log")/seen-env.txt"\n'
                 'echo "========= COMPUTE-SANITIZER" > "$log"\n"$@"; code=$?\n'
                 'echo "========= ERROR SUMMARY: 0 errors" >> "$log"\nexit $code\n')
    given = {"PATH": os.environ["PATH"], "TRITON_CACHE_DIR": str(tmp_path / "child" / "triton")}
    runs = run_sanitizers(_job(), given, tmp_path / "runs", 120, tools=("initcheck",), executable=tool)
    run = runs[0]
    seen = dict(line.split("=", 1) for line in (tmp_path / "runs" / "initcheck" / "seen-env.txt").read_text()
                .splitlines() if "=" in line)
    assert seen["PYTORCH_NO_CUDA_MEMORY_CACHING"] == "1"
    assert seen["TRITON_CACHE_DIR"] == given["TRITON_CACHE_DIR"]  # the checking child's compiled kernels
    assert seen["HOME"] == seen["TMPDIR"] == str(tmp_path / "runs" / "initcheck")
    assert "KERNELLAB_SECRET_IN_THE_JUDGE" not in seen
    assert run.mark("started") is not None and run.mark("imported") is None
    assert run.outcome == "tool_failure" and run.mark("setup_failed") is not None


def test_what_the_tool_reports_about_a_kernel_becomes_a_violation_and_fails_the_stage(tmp_path):
    report = textwrap.dedent("""\
        ========= COMPUTE-SANITIZER
        ========= Invalid __global__ write of size 4 bytes
        =========     at _add_tail_unmasked+0x1f0 in c.py:24
        =========     by thread (40,0,0) in block (7,0,0)
        =========     Access to 0x7f0000001000 is out of bounds
        =========     and is 4 bytes after the nearest allocation at 0x7f0000000000 of size 4,000 bytes
        ========= ERROR SUMMARY: 1 error
        """)
    (tmp_path / "report.txt").write_text(report)
    tool = _tool(tmp_path, _ARGS + f'cat "{tmp_path / "report.txt"}" > "$log"\nexit 0\n')
    runs = run_sanitizers(_job(), {"PATH": os.environ["PATH"]}, tmp_path / "runs", 30, tools=("memcheck",),
                          executable=tool)
    ctx = _context(tmp_path)
    result = sanitize.judge(ctx, runs, 9)
    assert not result.passed
    assert [v.kind.value for v in ctx.verdict.violations] == ["memory_safety"]
    detail = ctx.verdict.violations[0].detail
    assert detail == ("memcheck: Invalid __global__ write of size 4 bytes in kernel _add_tail_unmasked at c.py:24 "
                      "(out of bounds, 4 bytes after an allocation of 4000 bytes)")
    assert result.error == f"memory_safety: {detail}"


def test_a_tool_past_its_time_limit_is_killed_with_its_process_group(tmp_path):
    tool = _tool(tmp_path, _ARGS + 'sleep 300 &\necho $! > "$(dirname "$log")/child.pid"\nwait\n')
    started = time.monotonic()
    runs = run_sanitizers(_job(), {"PATH": os.environ["PATH"]}, tmp_path / "runs", 2, tools=("racecheck",),
                          executable=tool)
    assert time.monotonic() - started < 20
    assert runs[0].outcome == "timeout" and runs[0].exitcode is None
    pid = int((tmp_path / "runs" / "racecheck" / "child.pid").read_text())
    assert _gone(pid), "the tool's child outlived the time limit"  # it went with the group
    ctx = _context(tmp_path)
    result = sanitize.judge(ctx, runs, 9)
    assert result.passed and "did not finish" in result.skipped and "0 of 9 calls checked" in result.skipped


def test_eval_command_no_sanitize_flag_leaves_the_stage_out():
    import json
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "kernellab.cli.main", "eval", "--task", str(VECTOR_ADD),
                           "--candidate", str(CANDIDATES / "masked_add.py"), "--configs", "seen", "--device", "cpu",
                           "--no-sanitize", "--json"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    verdict = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "sanitize" not in [s["name"] for s in verdict["stages"]]


# ---------------------------------------------------------------------------------------------- GPU


@pytest.fixture(scope="module")
def gpu_session():
    options = with_stages(EvalOptions(request_timeout_s=120, compile_ahead=0), Stage.SMOKE, Stage.EDGE, Stage.SANITIZE)
    with EvalSession(load_task(VECTOR_ADD), options) as session:
        yield session


@pytest.mark.gpu
@pytest.mark.parametrize("name, kind, words", [
    ("tail_store_past_end", "memory_safety", ("memcheck: Invalid __global__ write", "_add_tail_unmasked")),
    ("scratch_assumed_zero", "memory_safety", ("initcheck: Uninitialized __global__ memory read", "_add_with_carry")),
    ("cuda_smem_race", "race", ("racecheck: shared-memory race", "staged_add_kernel")),
])
def test_the_sanitizer_rejects_kernels_that_pass_every_output_check(gpu_session, name, kind, words):
    verdict = gpu_session.evaluate(CANDIDATES / f"{name}.py")
    summary = f"{verdict.status.value} {verdict.failed_stage} {verdict.error} {verdict.violations} {verdict.notes}"
    assert verdict.failed_stage is not None and verdict.failed_stage.value == "sanitize", summary
    details = [v.detail for v in verdict.violations if v.kind.value == kind]
    assert details and all(word in details[0] for word in words), summary
    assert verdict.error.count("\n") == 0


@pytest.mark.gpu
def test_a_clean_kernel_passes_the_sanitizer(gpu_session):
    verdict = gpu_session.evaluate(CANDIDATES / "masked_add.py")
    stage = next(s for s in verdict.stages if s.name is Stage.SANITIZE)
    assert verdict.status.value == "passed" and verdict.correct, (verdict.error, verdict.notes)
    assert stage.passed and stage.skipped is None, stage
    assert any("clean" in n and "compute-sanitizer" in n for n in verdict.notes)


@pytest.mark.gpu
def test_without_the_tool_a_faulty_kernel_is_not_caught_and_the_verdict_says_why(gpu_session, monkeypatch):
    monkeypatch.setenv(OVERRIDE, "none")
    verdict = gpu_session.evaluate(CANDIDATES / "tail_store_past_end.py")
    stage = next(s for s in verdict.stages if s.name is Stage.SANITIZE)
    assert verdict.status.value == "passed" and "not found" in stage.skipped


@pytest.mark.gpu
def test_a_backward_triton_example_is_clean_forward_and_backward():
    options = with_stages(EvalOptions(request_timeout_s=120), Stage.SMOKE, Stage.EDGE, Stage.BACKWARD, Stage.SANITIZE)
    with EvalSession(load_task("normalization/rmsnorm"), options) as session:
        verdict = session.evaluate(ROOT / "examples" / "rmsnorm_triton.py")
    stage = next(s for s in verdict.stages if s.name is Stage.SANITIZE)
    assert verdict.status.value == "passed" and verdict.correct, (verdict.error, verdict.violations, verdict.notes)
    assert stage.passed and stage.skipped is None and stage.seconds < 30, stage
