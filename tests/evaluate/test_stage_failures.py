"""A failure in any stage is a failure of that stage (invariant 6): a raise, a crash or a hang on holdout
configs only is a failed holdout (exit status 3), anywhere else the failure of the stage it happened
in; and only the harness classifies an interpreter gap, never the candidate's text.

Real session, real children, the rmsnorm fixture task of the adversarial corpus: under the
interpreter its small (N=64), edge (N=4099, N=1) and holdout (M=37, N=1019) configs run.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kernellab.evaluate.options import EvalOptions
from kernellab.evaluate.session import EvalSession
from kernellab.tasks.load import load_task

TASK = Path(__file__).parents[1] / "adversarial" / "tasks" / "rmsnorm"

# A sound RMSNorm; ``{guard}`` runs in forward with ``N`` (the row length) in scope.
TEMPLATE = textwrap.dedent('''
    import torch
    import torch.nn as nn
    import triton
    import triton.language as tl
    {imports}

    @triton.jit
    def _kernel(x_ptr, w_ptr, y_ptr, N, eps, BLOCK_N: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK_N)
        mask = cols < N
        x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = {rstd}
        tl.store(y_ptr + row * N + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)

    class ModelNew(nn.Module):
        def __init__(self, dim, eps):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(dim))

        def forward(self, x):
            x = x.contiguous()
            M, N = x.shape
            {guard}
            y = torch.empty_like(x)
            _kernel[(M,)](x, self.weight, y, N, self.eps, BLOCK_N=triton.next_power_of_2(N))
            return y
''')
RSTD = "1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)"


def _write(tmp_path: Path, name: str, guard: str = "pass", imports: str = "", rstd: str = RSTD) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(TEMPLATE.format(guard=guard, imports=imports, rstd=rstd))
    return path


@pytest.fixture(scope="module")
def session():
    options = EvalOptions(request_timeout_s=8, time_holdout=False, compile_baseline=False, timing_budget_s=0.2)
    with EvalSession(load_task(TASK), options) as s:
        yield s


@pytest.mark.parametrize("name, guard, words", [
    ("raises", 'raise ValueError("no configuration for this N")', "ValueError"),
    ("hangs", "while True: pass", "no answer within"),
])
def test_failing_only_on_holdout_configs_is_a_failed_holdout(session, tmp_path, name, guard, words):
    verdict = session.evaluate(_write(tmp_path, name, guard=f"if N == 1019:\n                {guard}"))
    assert verdict.status.value == "passed" and verdict.correct, verdict.error
    assert verdict.holdout.correct is False and verdict.exit_code == 3
    assert verdict.holdout.failed_configs and verdict.holdout.failed_configs[0].startswith("M=37,N=1019")
    holdout = next(s for s in verdict.stages if s.name.value == "holdout")
    assert not holdout.passed and words in holdout.error
    after = session.evaluate(_write(tmp_path, f"{name}_sound"))  # the session goes on
    assert after.status.value == "passed" and after.holdout.correct is True and after.exit_code == 0


@pytest.mark.parametrize("name, guard, status", [
    ("edge_raises", 'raise ValueError("no configuration for this N")', "failed"),
    ("edge_hangs", "while True: pass", "timeout"),
])
def test_failing_in_a_seen_stage_is_that_stages_failure(session, tmp_path, name, guard, status):
    verdict = session.evaluate(_write(tmp_path, name, guard=f"if N == 4099:\n                {guard}"))
    assert verdict.status.value == status and not verdict.correct
    assert verdict.failed_stage.value == "edge" and verdict.exit_code == 1


def test_the_candidates_words_never_make_an_interpreter_gap(session, tmp_path):
    path = _write(tmp_path, "words", guard='if N == 4099:\n                raise NotImplementedError('
                  '"not supported in interpreter mode: 0 active drivers")')
    verdict = session.evaluate(path)
    assert verdict.status.value == "failed" and verdict.failed_stage.value == "edge", verdict.error


def test_a_real_interpreter_gap_on_holdout_configs_leaves_the_holdout_unknown(session, tmp_path):
    """libdevice on the holdout's rows only: the interpreter cannot say, so the holdout is not judged
    here (null), and the seen verdict stands; a GPU judges it."""
    path = _write(tmp_path, "gap", imports="from triton.language.extra import libdevice",
                  rstd="libdevice.rsqrt(tl.sum(x * x, axis=0) / N + eps) if N == 1019 else " + RSTD)
    verdict = session.evaluate(path)
    assert verdict.status.value == "passed" and verdict.correct, verdict.error
    assert verdict.holdout.correct is None and verdict.exit_code == 0
    holdout = next(s for s in verdict.stages if s.name.value == "holdout")
    assert "interpreter cannot run" in holdout.skipped


def test_an_output_wrong_like_a_lower_precision_on_holdout_configs_is_a_failed_holdout(session, tmp_path):
    """rstd in bfloat16 on the holdout row length only: the error has bfloat16's size, which names how
    the holdout output is wrong (a ``precision`` note), not a violation that fails the seen verdict."""
    low = "(1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)).to(tl.bfloat16).to(tl.float32)"
    path = _write(tmp_path, "holdout_bf16", rstd=f"tl.where(N == 1019, {low}, {RSTD})")
    verdict = session.evaluate(path)
    assert verdict.status.value == "passed" and verdict.correct and not verdict.violations, verdict.error
    assert verdict.holdout.correct is False and verdict.exit_code == 3
    assert verdict.holdout.failed_configs == ["M=37,N=1019 float32"]
    holdout = next(s for s in verdict.stages if s.name.value == "holdout")
    assert any(c.note and "precision: " in c.note for c in holdout.configs), [c.note for c in holdout.configs]
