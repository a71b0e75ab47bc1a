"""What results cost (wall time, tokens, agent steps, money) and what they use (memory, roofline).

Costs are summed over every attempt of a job, scored or not: an agent pays for its failures too.
Unknown values (an adapter that reports no tokens) are skipped; a total over nothing known is None.
"""

from __future__ import annotations

from collections.abc import Sequence

from kernellab.score.records import Result
from kernellab.score.speedup import scored
from kernellab.score.stats import geomean, mean, ratio, total

COST_FIELDS = ("wall_s", "tokens", "tokens_in", "tokens_out", "steps", "cost_usd")


def cost_summary(results: Sequence[Result]) -> dict:
    """Total and mean of each cost over all results, plus money and wall time per correct result."""
    out: dict = {"n": len(results)}
    for name in COST_FIELDS:
        values = [getattr(r, name) for r in results]
        out[name] = {"total": total(values), "mean": mean(values)}
    n_correct = sum(1 for r in scored(results) if r.correct)
    out["cost_usd_per_correct"] = ratio(out["cost_usd"]["total"], n_correct)
    out["wall_s_per_correct"] = ratio(out["wall_s"]["total"], n_correct)
    return out


def memory_summary(results: Sequence[Result]) -> dict:
    """Peak memory of correct results: the geometric mean and worst candidate/eager ratio where both
    were measured, and the largest candidate peak in bytes."""
    rs = [r for r in scored(results) if r.correct]
    ratios = [r.peak_mem_ratio for r in rs if r.peak_mem_ratio is not None]
    peaks = [r.peak_mem_bytes for r in rs if r.peak_mem_bytes is not None]
    return {"n": len(ratios), "peak_mem_ratio_geomean": geomean(ratios),
            "peak_mem_ratio_max": max(ratios) if ratios else None,
            "peak_mem_bytes_max": max(peaks) if peaks else None}


def roofline_summary(results: Sequence[Result]) -> dict:
    """Mean % of roofline over correct results (a bounded percentage: the arithmetic mean is right)."""
    values = [r.pct_of_roofline for r in scored(results) if r.correct and r.pct_of_roofline is not None]
    return {"n": len(values), "pct_of_roofline_mean": mean(values)}
