"""The untried candidates of one solve: template instantiations and launch-parameter rewrites.

A ``CandidatePool`` lives for one task. Each proposal asks it for the candidates of the kernel in hand
(the request's ``parent``), best guesses first and never one it handed out before. It learns from the
strategy without reading feedback text: when the next request's parent is the source it proposed last,
that change was kept, and the next moves continue in the same direction; otherwise it was reverted and
the pool moves on to the next candidate of the same parent.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass

from kernellab.agents.search.params import find_knobs
from kernellab.agents.search.space import Hint, variants
from kernellab.tasks.model import Task

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Candidate:
    source: str
    description: str
    origin: str  # "template:<name>" or "tune"
    changes: tuple[tuple[str, int, int], ...] = ()  # (knob, old, new) for a rewrite

    @property
    def digest(self) -> str:
        return digest(self.source)


def digest(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


class CandidatePool:
    def __init__(self, task: Task | None, seed: int = 0, use_templates: bool = True, use_tuning: bool = True):
        self.task = task
        self.seed = seed
        self.use_tuning = use_tuning
        self.tried: set[str] = set()
        self.last: Candidate | None = None
        self.hint: Hint | None = None
        self.kept: list[str] = []  # descriptions of changes the strategy kept
        self._templates: list[Candidate] | None = None if use_templates and task is not None else []

    def observe(self, parent: str) -> None:
        """Learn whether the last proposal was kept (it is the new parent) or reverted."""
        self.tried.add(digest(parent))
        if self.last is None:
            return
        if digest(parent) == self.last.digest:
            self.kept.append(self.last.description)
            self.hint = Hint(self.last.changes) if self.last.changes else None
        else:
            self.hint = None
        self.last = None

    def candidates(self, parent: str) -> list[Candidate]:
        """Untried candidates for ``parent``, best guesses first."""
        found: list[Candidate] = []
        tuned: list[Candidate] = []
        if self.use_tuning:
            knobs = find_knobs(parent)
            old = {k.name: k.value for k in knobs}
            for v in variants(parent, knobs, self.seed, self.hint):
                changes = tuple((name, old[name], value) for name, value in v.values)
                tuned.append(Candidate(v.source, f"tune: {v.description}", "tune", changes))
        followed = {name for name, _, _ in self.hint.changes} if self.hint else set()
        if tuned and followed and {name for name, _, _ in tuned[0].changes} <= followed:
            found.append(tuned.pop(0))  # one step further along the direction that was kept
        found += self.template_candidates() + tuned
        unique, seen = [], set()
        for c in found:
            if c.digest not in self.tried and c.digest not in seen:
                seen.add(c.digest)
                unique.append(c)
        return unique

    def template_candidates(self) -> list[Candidate]:
        if self._templates is None:
            from kernellab.kernels import match_templates

            self._templates = []
            for match in match_templates(self.task):
                for params in match.presets():
                    try:
                        source = match.render(params)
                    except Exception as exc:  # noqa: BLE001 - a template defect must not end the solve
                        log.warning("template %s could not render %s: %s", match.template.name, params, exc)
                        continue
                    detail = ", ".join(f"{k}={v}" for k, v in params.items()) or "defaults"
                    self._templates.append(Candidate(source, f"template {match.template.name} ({detail}): "
                                                             f"{match.summary}", f"template:{match.template.name}"))
        return self._templates

    def mark(self, candidate: Candidate, proposed: bool) -> None:
        self.tried.add(candidate.digest)
        if proposed:
            self.last = candidate
