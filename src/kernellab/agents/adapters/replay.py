"""``replay``: re-score recorded kernels, no LLM.

Option ``kernels`` is a file (the one recorded kernel, for any task) or a folder holding, per task,
one of (``/`` in a task id is also tried as ``__``):

    <dir>/<task_id>/iter_*.py    every iteration, proposed in numeric order
    <dir>/<task_id>/kernel.py    one kernel
    <dir>/<task_id>.py           one kernel (normalization/rmsnorm.py, or normalization__rmsnorm.py)

Proposal i of a task returns its i-th recorded kernel; after the last, no source and the note
"no more recorded kernels".
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from kernellab.agents.base import (
    Agent,
    AgentError,
    Proposal,
    ProposalRequest,
    Usage,
    register,
)

_ITERATION = re.compile(r"^iter_(\d+)(.*)\.py$")


@register("replay")
class ReplayAgent(Agent):
    uses_llm = False
    path_options = ("kernels",)  # names files of the machine that starts a campaign: sent to its workers

    def __init__(self, kernels: str | Path | None = None, **unknown: Any):
        if unknown:
            raise AgentError(f"replay: unknown option {min(unknown)!r} (replay takes kernels=<dir or file>)")
        if kernels is None or str(kernels) == "":
            raise AgentError("replay needs kernels=<dir or file>: the recorded kernels to re-score")
        self.root = Path(kernels).expanduser()
        if not self.root.exists():
            raise AgentError(f"replay: kernels={kernels} does not exist")
        self._served: dict[str, int] = {}

    def recorded(self, task_id: str) -> list[Path]:
        """The recorded kernels of ``task_id``, in the order they are proposed."""
        if self.root.is_file():
            return [self.root]
        for name in dict.fromkeys((task_id, task_id.replace("/", "__"))):
            folder = self.root / name
            if folder.is_dir():
                iterations = sorted((p for p in folder.iterdir() if p.is_file() and _ITERATION.match(p.name)),
                                    key=lambda p: (int(_ITERATION.match(p.name).group(1)), p.name))
                if iterations:
                    return iterations
                if (folder / "kernel.py").is_file():
                    return [folder / "kernel.py"]
            single = self.root / f"{name}.py"
            if single.is_file():
                return [single]
        return []

    def propose(self, request: ProposalRequest) -> Proposal:
        started = time.perf_counter()
        files = self.recorded(request.task_id)
        index = self._served.get(request.task_id, 0)
        if not files:
            return Proposal(None, Usage(cost_usd=0.0), note=f"no recorded kernel for {request.task_id} in {self.root}")
        if index >= len(files):
            return Proposal(None, Usage(cost_usd=0.0), note="no more recorded kernels")
        self._served[request.task_id] = index + 1
        path = files[index]
        try:
            source = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            return Proposal(None, Usage(cost_usd=0.0), note=f"cannot read recorded kernel {path}: {exc}")
        return Proposal(source, Usage(cost_usd=0.0, wall_s=time.perf_counter() - started),
                        note=f"recorded kernel {index + 1}/{len(files)}: {path}")
