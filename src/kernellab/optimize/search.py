"""Speed up each extracted op with the existing solve machinery (any agent, any strategy).

Each op gets its own ``solve`` in ``DIR/solves/<slug>`` with the per-op budget; the final verdict
(every stage, holdout configs included) decides whether its kernel is a candidate for installation:
it must pass, and on a GPU be faster than eager on the op itself.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernellab.agents.solve import SolveOptions, solve
from kernellab.evaluate.options import EvalOptions
from kernellab.optimize.records import OpRecord

log = logging.getLogger(__name__)


def search_ops(ops: list[OpRecord], out: Path, *, agent: str, strategy: str, budget: str, device: str,
               agent_options: dict[str, Any] | None = None, strategy_options: dict[str, Any] | None = None,
               seed: int = 0, progress: Callable[[str], None] | None = None, sanitize: bool = True) -> None:
    """Solve each op; the whole model is compared with torch.compile later, so the per-op verdicts
    skip the torch.compile baseline and holdout timings (holdout correctness is still judged)."""
    options = EvalOptions(device=device, compile_baseline=False, time_holdout=False, sanitize=sanitize)
    (out / "kernels").mkdir(exist_ok=True)
    for op in ops:
        if agent == "search" and op.template is None:
            op.solve_status, op.solve_note = "skipped", "no search template matches this op's task"
            continue
        if progress:
            progress(f"solving {op.slug} ({op.key}) with {agent}/{strategy}, budget {budget}")
        folder = out / "solves" / op.slug
        if folder.exists():
            shutil.rmtree(folder)
        try:
            result = solve(out / op.task, SolveOptions(agent, folder, agent_options or {}, strategy,
                                                       strategy_options or {}, budget, confine=True,
                                                       eval_options=options, seed=seed))
        except Exception as exc:  # noqa: BLE001 - one op's failure is that op's verdict, not the run's
            log.warning("solve of %s failed: %s", op.slug, exc)
            op.solve_status, op.solve_note = "error", f"{type(exc).__name__}: {exc}"
            continue
        op.solve_status, op.solve_note = result.status, result.summary
        verdict = result.final_verdict
        if verdict is not None:
            op.op_speedup = {k: v for k, v in verdict.speedup.items()}
        timed = bool(verdict is not None and verdict.timings)
        faster = (op.op_speedup.get("vs_eager") or 0.0) > 1.0
        if result.status == "passed" and result.best_kernel is not None and (faster or not timed):
            target = out / "kernels" / f"{op.slug}.py"
            shutil.copyfile(result.best_kernel, target)
            op.kernel = f"kernels/{op.slug}.py"
            op.verified_dtypes = sorted({t.dtype for t in verdict.timings}) or list(op.dtypes[:1])
        elif result.status == "passed":
            op.solve_note = f"correct but not faster than eager on the op (x{op.op_speedup.get('vs_eager')})"
