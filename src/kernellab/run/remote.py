"""A worker that holds no store: it runs the jobs a driver sends it, in a scratch folder of its own
node, and gives each solve folder back as bytes (``payload``). The Ray backend runs one per slot as
an actor; nothing here imports Ray, so it runs (and is tested) as plain Python too.

The GPU rules are the local workers': one ``GpuLock`` per GPU index, an ``flock`` in this node's lock
folder, taken by the ``EvaluationGate`` while a solve judges a kernel, and the lock's exclusive hold
installed as the evaluator's timing guard. So evaluation slots and the timing lock hold per node and
GPU, across campaigns on that node.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernellab.run.job import SolveEnd, run_solve
from kernellab.run.payload import (
    JobPayload,
    JobReturn,
    materialize_task,
    pack_bytes,
    unpack_bytes,
)
from kernellab.run.scheduler import EvaluationGate, GpuLock

log = logging.getLogger(__name__)


class NodeWorker:
    """Runs jobs from payloads. ``resolve`` turns a payload's shared parts (object references on Ray)
    into values; ``node`` names this worker's machine in the campaign's record."""

    def __init__(self, *, interpret: bool, gpu: int | None, node: str | None = None, lock_scope: str = "evaluation",
                 resolve: Callable[[Any], Any] = lambda x: x, scratch: Path | None = None) -> None:
        self.interpret = interpret
        self.gpu = None if interpret else gpu
        self.node = node or socket.gethostname()
        self.lock_scope = lock_scope
        self.resolve = resolve
        self.scratch = scratch or Path(tempfile.mkdtemp(prefix="kernellab-worker-"))
        self.cache = self.scratch / "bundles"
        self.cache.mkdir(parents=True, exist_ok=True)
        self.lock = GpuLock(self.gpu) if self.gpu is not None else None
        if self.lock is not None:
            from kernellab.evaluate.gpu_sharing import set_guards

            set_guards(self.lock.exclusive, self.lock.alone)

    def where(self) -> dict[str, Any]:
        return {"node": self.node, "gpu": self.gpu, "pid": os.getpid(), "host": socket.gethostname()}

    def run(self, payload: JobPayload) -> JobReturn:
        """Run one job to its end here and give back its solve folder (then removed from this node)."""
        started = time.monotonic()
        spec = self.resolve(payload.spec)
        out = self.scratch / "jobs" / payload.dir_name
        shutil.rmtree(out, ignore_errors=True)
        if payload.previous is not None:
            unpack_bytes(payload.previous, out)
        try:
            try:
                task = materialize_task(self.resolve(payload.task), self.cache)
                options = spec.options_for(payload.agent)
                for key, bundle in payload.shipped.items():
                    options[key] = str(self.resolve(bundle).unpack(self.cache))
            except Exception as exc:  # noqa: BLE001 — files that cannot be set up here: the job's error
                end = SolveEnd("error", f"{type(exc).__name__}: {exc}")
            else:
                gate = EvaluationGate(self.lock, None, self.lock_scope)
                try:
                    end = run_solve(task, payload.agent, payload.seed, spec, out, interpret=payload.interpret,
                                    progress=gate, agent_options=options)
                finally:
                    gate.close()
            solve = pack_bytes(out) if out.exists() else None
        finally:
            shutil.rmtree(out, ignore_errors=True)
        log.info("job %s (%s) try %s: %s", payload.job_id, payload.dir_name, payload.attempt, end.status)
        return JobReturn(payload.job_id, end.status, end.error, solve, self.node, self.gpu,
                         time.monotonic() - started)

    def close(self) -> None:
        if self.lock is not None:
            self.lock.end()
        shutil.rmtree(self.scratch, ignore_errors=True)
