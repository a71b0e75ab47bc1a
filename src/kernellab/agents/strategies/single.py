"""``single``: one proposal, judged once with the full verdict (every stage, holdout included,
against the pristine task, from a file outside the workspace). It is the answer, correct or not."""

from __future__ import annotations

from kernellab.agents.strategies.base import (
    Strategy,
    StrategyOutcome,
    register_strategy,
)
from kernellab.agents.strategies.context import SearchContext
from kernellab.agents.strategies.stopping import Stop


@register_strategy("single")
class Single(Strategy):
    proposals_at_most = 1

    def run(self, ctx: SearchContext) -> StrategyOutcome:
        if (stop := ctx.stop()) is not None:
            return StrategyOutcome(None, stop, "no proposal made")
        cand = ctx.propose(ctx.start, operator="proposal", feedback=ctx.feedback(ctx.start))
        if cand.source is None:
            ctx.record(cand, decision="no_kernel", reason=f"the agent produced no kernel: {cand.note}", kept=False,
                       improved=False)
            return StrategyOutcome(None, Stop("done", "the one proposal produced no kernel"))
        ctx.evaluate(cand, full=True)
        ctx.record(cand, decision="answer", reason="the one proposal of a single-shot run (full verdict)", kept=True,
                   improved=cand.correct)
        return StrategyOutcome(cand, Stop("done", "one proposal made"))
