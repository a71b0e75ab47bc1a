"""Per-iteration curves (KernelBench-X): how compile rate, correctness and the best speed found so far
evolve with the iterations of a search or refinement loop.
"""

from __future__ import annotations

from collections.abc import Sequence

from kernellab.score.records import AttemptPoint
from kernellab.score.stats import fraction, geomean, positive


def per_iteration(points: Sequence[AttemptPoint]) -> list[dict]:
    """One row per iteration number present, in order.

    - ``attempts``, ``compile_rate``, ``correct_rate``: over the scored attempts made at that
      iteration (a job that already stopped contributes nothing to later iterations).
    - ``solved_so_far``: fraction of all jobs with a correct attempt at this iteration or before.
    - ``best_speedup_geomean``: geometric mean, over jobs with a correct timed attempt so far, of
      each job's best speedup so far (carried forward once a job stops).
    """
    ps = [p for p in points if p.scored]
    jobs = {p.job for p in ps}
    best: dict[str, float] = {}
    solved: set[str] = set()
    rows = []
    for it in sorted({p.iteration for p in ps}):
        here = [p for p in ps if p.iteration == it]
        for p in here:
            if p.correct:
                solved.add(p.job)
                s = positive([p.speedup])
                if s and s[0] > best.get(p.job, 0.0):
                    best[p.job] = s[0]
        rows.append({"iteration": it, "attempts": len(here),
                     "compile_rate": fraction(sum(p.compiled for p in here), len(here)),
                     "correct_rate": fraction(sum(p.correct for p in here), len(here)),
                     "solved_so_far": fraction(len(solved), len(jobs)),
                     "best_speedup_geomean": geomean(best.values()),
                     "jobs_with_speedup": len(best)})
    return rows
