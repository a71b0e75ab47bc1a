"""``best-of-n``: ``n`` independent proposals from the same parent (the starting kernel), each with
its own seed; the fastest correct one is kept (on the interpreter, where nothing is timed, the
first correct one). Options: ``n`` and the search options (stop rules, verifier)."""

from __future__ import annotations

from dataclasses import dataclass

from kernellab.agents.strategies.base import StrategyOutcome, register_strategy
from kernellab.agents.strategies.compare import fastest, is_faster
from kernellab.agents.strategies.context import Candidate, SearchContext, rejection
from kernellab.agents.strategies.options import SearchOptions, SearchStrategy
from kernellab.agents.strategies.stopping import Stop


@dataclass(frozen=True)
class BestOfNOptions(SearchOptions):
    n: int = 4

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.n < 1:
            raise ValueError("n must be at least 1")


@register_strategy("best-of-n")
class BestOfN(SearchStrategy):
    Options = BestOfNOptions
    options: BestOfNOptions

    def run(self, ctx: SearchContext) -> StrategyOutcome:
        feedback = ctx.feedback(ctx.start)
        proposals: list[Candidate] = []
        stop = None
        for i in range(self.options.n):
            if (stop := ctx.stop()) is not None:
                break
            cand = ctx.propose(ctx.start, operator="sample", feedback=feedback, seed=ctx.seed + i)
            ctx.evaluate(cand)
            proposals.append(cand)
            best = ctx.best if ctx.best is not ctx.start else None
            improved = cand.correct and (best is None or is_faster(cand.verdict, best.verdict))
            ctx.record(cand, decision="sample", reason=_why(cand, improved, best), kept=False, improved=improved)
        stop = stop or Stop("done", f"{len(proposals)} of {self.options.n} proposals made")
        index, reason = fastest([c.verdict for c in proposals])
        if index is None:
            return StrategyOutcome(None, stop, "no proposal was correct")
        winner = proposals[index]
        ctx.mark_kept(winner, reason)
        return StrategyOutcome(winner, stop, f"{winner.id}: {reason}")


def _why(cand: Candidate, improved: bool, best: Candidate | None) -> str:
    if not cand.correct:
        return rejection(cand)
    if improved:
        return "correct: the fastest so far" if best is not None else "correct: the first correct proposal"
    return f"correct, not faster than {best.id}" if best is not None else "correct"
