"""``keep-revert``: hill climbing. Every proposal starts from the kept kernel (the incumbent); a
candidate is kept only when it is correct and faster than the incumbent by more than ``min_gain``
(1%) beyond the noise of both timings, else the workspace reverts to the incumbent.

The margin comes from the timings themselves: per seen config x dtype x phase the candidate's
pessimistic speedup is the incumbent's CI low over the candidate's CI high (``Timing.ci95_us``), and
the geometric mean of those over the timings both verdicts have must exceed ``1 + min_gain``. A first
correct kernel is kept whatever its speed. Under the interpreter nothing is timed: a correct kernel
replaces an incorrect incumbent, and one that would replace a correct incumbent is reverted, "not timed".

Stop rules (each optional, the first to fire ends the search): ``patience`` reverts in a row
(default 5), ``target_roofline_pct``, ``target_speedup`` vs ``target_vs``, and the solve's budget
(time, money, iterations).
"""

from __future__ import annotations

from dataclasses import dataclass

from kernellab.agents.strategies.base import StrategyOutcome, register_strategy
from kernellab.agents.strategies.compare import Comparison, compare_timings
from kernellab.agents.strategies.context import Candidate, SearchContext, rejection
from kernellab.agents.strategies.options import SearchOptions, SearchStrategy
from kernellab.evaluate.verdict import Verdict


@dataclass(frozen=True)
class Decision:
    keep: bool
    reason: str
    comparison: Comparison | None = None


def keep_or_revert(candidate: Verdict, incumbent: Verdict | None, *, min_gain: float = 0.01) -> Decision:
    """Keep ``candidate`` over ``incumbent`` (None or incorrect: nothing correct is kept yet)?"""
    if not candidate.correct:
        where = f" at {candidate.failed_stage.value}" if candidate.failed_stage else ""
        return Decision(False, f"incorrect ({candidate.status.value}{where})")
    if incumbent is None or not incumbent.correct:
        return Decision(True, "the first correct kernel")
    c = compare_timings(candidate, incumbent)
    if not c.timed:
        return Decision(False, "not timed: correct, but without timings it cannot be shown faster than the kept "
                               "kernel", c)
    margin = f"{100 * min_gain:g}%"
    if c.beats(min_gain):
        return Decision(True, f"x{c.speedup:.3f} faster than the kept kernel (x{c.speedup_low:.3f} at worst within "
                              f"the 95% CIs, over {c.matched} timings; needed > {margin})", c)
    return Decision(False, f"x{c.speedup:.3f} vs the kept kernel: not {margin} faster beyond the timing CIs "
                           f"(x{c.speedup_low:.3f} at worst)", c)


@dataclass(frozen=True)
class KeepRevertOptions(SearchOptions):
    patience: int | None = 5


@register_strategy("keep-revert")
class KeepRevert(SearchStrategy):
    Options = KeepRevertOptions
    options: KeepRevertOptions

    def run(self, ctx: SearchContext) -> StrategyOutcome:
        incumbent: Candidate | None = ctx.start if ctx.start.correct else None
        last: Candidate | None = None
        outcome: str | None = None
        while (stop := ctx.stop()) is None:
            parent = incumbent or ctx.start
            feedback = ctx.feedback(last, outcome=outcome) if last is not None else ctx.feedback(parent)
            cand = ctx.propose(parent, operator="step", feedback=feedback)
            ctx.evaluate(cand)
            decision = self.decide(cand, incumbent)
            ctx.record(cand, decision="keep" if decision.keep else "revert", reason=decision.reason,
                       kept=decision.keep, improved=decision.keep)
            if decision.keep:
                incumbent = cand
                outcome = "This kernel was kept: kernel.py holds it."
            else:
                outcome = (f"This attempt was reverted ({decision.reason}); kernel.py is back to the kept kernel"
                           + (f", {incumbent.line()}." if incumbent is not None else "."))
            last = cand
        summary = f"kept {incumbent.id}" if incumbent is not None else "no correct kernel was found"
        return StrategyOutcome(incumbent, stop, summary)

    def decide(self, cand: Candidate, incumbent: Candidate | None) -> Decision:
        if cand.verdict is None:
            return Decision(False, rejection(cand))
        return keep_or_revert(cand.verdict, incumbent.verdict if incumbent is not None else None,
                              min_gain=self.options.min_gain)
