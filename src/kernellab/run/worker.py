"""A campaign worker: claim a job, run it, record it, until none is left.

``python -m kernellab.run.worker RUN_DIR --name w0 [--gpu 0 [--lock-scope timing] | --interpret]`` — started by the local
backend (one process per slot, ``CUDA_VISIBLE_DEVICES`` naming its GPU). The Ray backend's workers hold
no store (``remote``).
SIGINT or SIGTERM ends the job in hand cleanly (the solve records what it did and the job goes back
to pending) and stops the worker. A thread beats the job's heartbeat, and, when asked to watch a
parent, ends the worker if that parent dies (a killed orchestrator leaves no worker behind; its jobs
are reset on ``--resume``).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernellab.evaluate.gpu_sharing import set_guards
from kernellab.run.campaign import campaign_spec
from kernellab.run.job import execute_job
from kernellab.run.queue import JobQueue
from kernellab.run.scheduler import EvaluationGate, GpuLock, physical_gpu
from kernellab.score.store import Store

log = logging.getLogger(__name__)

HEARTBEAT_S = 5.0  # how often a running job's heartbeat is written (and the parent checked)


def work(run_dir: Path, name: str, *, gpu: int | None, interpret: bool, watch_parent: int | None = None,
         progress: Callable[[Any], None] | None = None, lock_scope: str = "evaluation") -> int:
    """Run jobs of the campaign in ``run_dir`` until none is pending; returns how many this worker ran.
    ``lock_scope``: what the GPU lock is held exclusively for, the whole ``evaluation`` or each ``timing``
    (``scheduler.EvaluationGate``)."""
    store = Store.open(run_dir, create=False)
    queue = JobQueue(store)
    stop = threading.Event()
    current: dict[str, int] = {}
    beat = threading.Thread(target=_heartbeat, args=(run_dir, current, stop, watch_parent), daemon=True)
    beat.start()
    ran = 0
    try:
        run = store.latest_run()
        if run is None:
            raise RuntimeError(f"{run_dir}: no campaign recorded")
        spec = campaign_spec(run)
        # its CUDA_VISIBLE_DEVICES names its one GPU; the lock is that GPU's, whatever index ``gpu`` is
        lock = GpuLock(physical_gpu(0)) if gpu is not None and not interpret else None
        if lock is not None:  # timings; an evaluation that ran short of memory beside others
            set_guards(lock.exclusive, lock.alone)
        while True:
            job = queue.claim(name, gpu=None if gpu is None else str(gpu), run_id=run.id)
            if job is None:
                break
            current["job"] = job.id
            gate = EvaluationGate(lock, progress, lock_scope)
            try:
                outcome = execute_job(store, job, spec, interpret=interpret, progress=gate,
                                      stopping=_STOP.is_set)
            finally:
                gate.close()
                current.pop("job", None)
            log.info("worker %s: job %s (%s) %s", name, job.id, job.key, outcome.status)
            if outcome.job_status is None:  # interrupted: the job is pending again
                break
            ran += 1
    finally:
        stop.set()
        store.close()
    return ran


def _heartbeat(run_dir: Path, current: dict[str, int], stop: threading.Event, parent: int | None) -> None:
    store = Store.open(run_dir, create=False)  # one Store per thread
    queue = JobQueue(store)
    try:
        while not stop.wait(HEARTBEAT_S if parent is None else 0.5):
            if parent is not None and os.getppid() != parent:
                log.warning("the orchestrator is gone; the worker stops (its job is reset on --resume)")
                if os.getpgrp() == os.getpid():  # its own process group: take the solve's processes too
                    os.killpg(os.getpgrp(), signal.SIGKILL)
                os._exit(1)
            job = current.get("job")
            if job is not None:
                queue.heartbeat(job)
    except Exception:
        log.exception("heartbeat thread stopped")
    finally:
        store.close()


_STOP = threading.Event()  # SIGINT or SIGTERM arrived: the job in hand goes back to pending


def _interrupt(signum: int, frame: Any) -> None:
    _STOP.set()
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernellab.run.worker")
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--name", required=True)
    parser.add_argument("--gpu", type=int, default=None)
    parser.add_argument("--interpret", action="store_true")
    parser.add_argument("--lock-scope", choices=("evaluation", "timing"), default="evaluation")
    parser.add_argument("--watch-parent", type=int, default=None)
    parser.add_argument("--debug", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    try:
        work(args.run_dir, args.name, gpu=args.gpu, interpret=args.interpret, watch_parent=args.watch_parent,
             lock_scope=args.lock_scope)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
