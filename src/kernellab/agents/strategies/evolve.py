"""``evolve``: an archive of correct kernels, grown over generations by mutation and crossover.

Each generation makes ``offspring`` children. A child's parent is chosen from the archive by a
tournament (``tournament`` members drawn at random; the fittest wins), where fitness is the
member's speed relative to the fastest in the archive (speedup vs eager; 1 for every member when
nothing is timed) plus ``novelty_weight`` times its novelty: the mean distance of its source to the
other members' (1 - the line-level similarity ratio of ``difflib``), so different kernels keep
being explored. With probability ``crossover_rate`` (and two members or more) a second parent is
drawn the same way and the child is asked to combine them (``ProposalRequest.others``); otherwise it
is asked for one of the mutations below (``ProposalRequest.instructions``). A correct child joins the
archive; beyond ``population`` members the least fit is dropped, never the fastest. Until a kernel
is correct, children start from the starting kernel, with the last failure as feedback.

The optional LLM verifier (``verifier_model=...``, see ``verifier``) judges each child's source
before it is run and skips the ones it predicts incorrect. Stop rules as for every search strategy.
"""

from __future__ import annotations

import difflib
import random
from collections.abc import Sequence
from dataclasses import dataclass

from kernellab.agents.strategies.base import StrategyOutcome, register_strategy
from kernellab.agents.strategies.compare import fastest, is_faster
from kernellab.agents.strategies.context import Candidate, SearchContext, rejection
from kernellab.agents.strategies.options import SearchOptions, SearchStrategy
from kernellab.agents.strategies.stopping import Stop

MUTATIONS = (
    "Change how the work is split: a different block or tile size, or more elements per program, and the grid.",
    "Reduce memory traffic: fuse passes, drop temporaries and extra copies, keep values in registers.",
    "Tune the launch: num_warps, num_stages and the grid, for the shapes in TASK.md.",
    "Make memory access wider and contiguous: vectorized loads and stores, fewer masked lanes.",
    "Simplify the arithmetic: fewer casts, divisions and transcendental calls where accuracy allows.",
)
CROSSOVER = ("Combine the kernel in kernel.py with the other kernel shown: keep the better ideas of each "
             "(tiling, launch parameters, memory access, arithmetic) in one correct kernel.")
REPAIR = "Make kernel.py correct first: fix what the feedback reports, then make it fast."


@dataclass(frozen=True)
class Member:
    """An archive member as the selection sees it: an id, its source, its speed (None: not timed)."""

    id: str
    source: str
    speed: float | None = None


def distance(a: str, b: str) -> float:
    """1 - the similarity ratio of the two sources' lines (0: the same, 1: nothing in common)."""
    return 1.0 - difflib.SequenceMatcher(None, a.splitlines(), b.splitlines(), autojunk=False).ratio()


def novelty(member: Member, members: Sequence[Member]) -> float:
    others = [m for m in members if m.id != member.id]
    return sum(distance(member.source, m.source) for m in others) / len(others) if others else 0.0


def fitness(members: Sequence[Member], novelty_weight: float) -> dict[str, float]:
    """Relative speed (the member's over the archive's fastest; 1 when nothing is timed, 0 for an
    untimed member among timed ones) plus ``novelty_weight`` x novelty."""
    speeds = [m.speed for m in members if m.speed is not None]
    top = max(speeds) if speeds else None
    scores = {}
    for m in members:
        relative = 1.0 if top is None else (m.speed / top if m.speed is not None else 0.0)
        scores[m.id] = relative + novelty_weight * novelty(m, members)
    return scores


def select_parent(members: Sequence[Member], rng: random.Random, *, tournament: int = 3,
                  novelty_weight: float = 0.3, exclude: Sequence[str] = ()) -> Member | None:
    """Tournament selection: ``tournament`` members drawn without replacement, the fittest wins
    (ties: the earlier member)."""
    pool = [m for m in members if m.id not in exclude]
    if not pool:
        return None
    drawn = rng.sample(pool, min(tournament, len(pool)))
    scores = fitness(members, novelty_weight)
    order = {m.id: i for i, m in enumerate(members)}
    return max(drawn, key=lambda m: (scores[m.id], -order[m.id]))


def prune(members: Sequence[Member], capacity: int, *, novelty_weight: float = 0.3,
          protect: Sequence[str] = ()) -> list[Member]:
    """The archive cut to ``capacity``: the least fit go first, protected ids (the fastest) never."""
    kept = list(members)
    while len(kept) > capacity:
        scores = fitness(kept, novelty_weight)
        losers = [m for m in kept if m.id not in protect]
        if not losers:
            break
        worst = min(reversed(losers), key=lambda m: scores[m.id])  # ties: the newest goes
        kept.remove(worst)
    return kept


@dataclass(frozen=True)
class EvolveOptions(SearchOptions):
    population: int = 6  # archive capacity
    generations: int = 3
    offspring: int = 4  # children per generation
    crossover_rate: float = 0.3
    tournament: int = 3
    novelty_weight: float = 0.3

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("population", "generations", "offspring", "tournament"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if not 0.0 <= self.crossover_rate <= 1.0:
            raise ValueError("crossover_rate must lie between 0 and 1")
        if self.novelty_weight < 0:
            raise ValueError("novelty_weight must not be negative")


@register_strategy("evolve")
class Evolve(SearchStrategy):
    Options = EvolveOptions
    options: EvolveOptions

    def run(self, ctx: SearchContext) -> StrategyOutcome:
        o = self.options
        archive: list[Candidate] = [ctx.start] if ctx.start.correct else []
        last_failure: Candidate | None = None
        stop: Stop | None = None
        for generation in range(1, o.generations + 1):
            for _ in range(o.offspring):
                if (stop := ctx.stop()) is not None:
                    break
                child = self._child(ctx, archive, last_failure, generation)
                ctx.evaluate(child)
                self._decide(ctx, archive, child)
                if not child.correct:
                    last_failure = child
            if stop is not None:
                break
        stop = stop or Stop("done", f"{_count(o.generations, 'generation')} of {_count(o.offspring, 'child', 'children')}"
                                    f" made")
        index, reason = fastest([c.verdict for c in archive])
        if index is None:
            return StrategyOutcome(None, stop, "no correct kernel entered the archive")
        best = archive[index]
        return StrategyOutcome(best, stop, f"{best.id}: {reason} in an archive of {len(archive)}")

    def _child(self, ctx: SearchContext, archive: list[Candidate], last_failure: Candidate | None,
               generation: int) -> Candidate:
        o = self.options
        members = [_member(c) for c in archive]
        parent_member = select_parent(members, ctx.rng, tournament=o.tournament, novelty_weight=o.novelty_weight)
        if parent_member is None:  # nothing correct yet: repair from the start, told what failed last
            return ctx.propose(ctx.start, operator=f"repair (generation {generation})", instructions=REPAIR,
                               feedback=ctx.feedback(last_failure or ctx.start))
        parent = next(c for c in archive if c.id == parent_member.id)
        if len(archive) >= 2 and ctx.rng.random() < o.crossover_rate:
            other_member = select_parent(members, ctx.rng, tournament=o.tournament, novelty_weight=o.novelty_weight,
                                         exclude=[parent.id])
            other = next(c for c in archive if c.id == other_member.id)  # type: ignore[union-attr]
            return ctx.propose(parent, operator=f"crossover (generation {generation})", instructions=CROSSOVER,
                               others=[other], feedback=ctx.feedback(parent))
        mutation = ctx.rng.choice(MUTATIONS)
        return ctx.propose(parent, operator=f"mutation (generation {generation})", instructions=mutation,
                           feedback=ctx.feedback(parent))

    def _decide(self, ctx: SearchContext, archive: list[Candidate], child: Candidate) -> None:
        o = self.options
        if not child.correct:
            ctx.record(child, decision="reject", reason=rejection(child), kept=False, improved=False)
            return
        same = next((c for c in archive if c.sha256 == child.sha256), None)
        if same is not None:
            ctx.record(child, decision="reject", reason=f"the same kernel as {same.id}, already archived", kept=False,
                       improved=False)
            return
        best = ctx.best
        improved = best is None or not best.correct or is_faster(child.verdict, best.verdict)  # type: ignore[arg-type]
        archive.append(child)
        protect = [child.id] if improved else ([best.id] if best is not None else [])
        kept_ids = {m.id for m in prune([_member(c) for c in archive], o.population, novelty_weight=o.novelty_weight,
                                        protect=protect)}
        dropped = [c.id for c in archive if c.id not in kept_ids]
        archive[:] = [c for c in archive if c.id in kept_ids]
        speed = f"x{child.speedup:.2f} vs eager" if child.speedup is not None else "not timed"
        if child.id not in kept_ids:
            ctx.record(child, decision="reject", reason=f"correct ({speed}) but the least fit of a full archive",
                       kept=False, improved=False)
            return
        reason = f"correct ({speed}): archived, {len(archive)} members"
        if improved:
            reason += "; the new best"
        if dropped:
            reason += f"; dropped {', '.join(dropped)}"
        ctx.record(child, decision="archive", reason=reason, kept=improved, improved=improved)


def _member(c: Candidate) -> Member:
    return Member(c.id, c.source or "", c.speedup)


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"
