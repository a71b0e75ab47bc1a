"""The Ray backend (optional extra ``ray``: ``pip install 'kernellab[ray]'``): the campaign's jobs on
the workers of a Ray cluster, with the store on the driver alone.

The driver (this process) owns ``RUN_DIR``: it claims each job in the campaign's store for a worker,
sends the worker the job as bytes (``payload.JobPayload``: the task's files, the files agent options
name, the campaign spec; what many jobs share is put in Ray's object store once), and, when the
worker gives the solve folder back (``payload.JobReturn``), unpacks it into ``RUN_DIR/jobs/<job>/``
and records it, as the local backend's workers do. No path needs to exist on any node but the
driver's, and SQLite is only ever opened on the driver's disk.

Workers are Ray actors (``RayNodeWorker``, one per slot: ``--agent-concurrency``), spread over the
nodes, each holding one CPU under the Triton interpreter or a GPU (a whole one, or an equal share
when there are more workers than GPUs). On its node, a worker keeps the local backend's GPU rules:
the per-GPU ``flock`` and the timing lock (``remote.NodeWorker``).

Faults:

- a worker process or its whole node dies mid-job: Ray fails the call; the job's try is recorded (a
  ``worker_lost`` event: try, worker, node, Ray's error), the job goes back to pending, and a new
  worker is started in the lost one's place, wherever the cluster has room. A job whose worker was
  lost ``MAX_TRIES`` times is failed with that error, so one job cannot keep a campaign from ending.
- the driver dies (even SIGKILL): Ray ends its workers; what was recorded stays. The jobs it held are
  marked with its own host and pid, so ``--resume`` sees them as a dead process's and puts them back
  to pending; a solve already unpacked but not yet recorded is recorded, not run again.
- Ctrl-C: the jobs in flight go back to pending, the workers are ended, and ``--resume`` runs those
  jobs again (their partial solves were on the nodes).
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernellab.run.campaign import CampaignError, campaign_spec
from kernellab.run.scheduler import WorkerSlot

log = logging.getLogger(__name__)

MAX_TRIES = 3  # a job whose worker was lost this many times is failed
HEARTBEAT_S = 5.0  # the driver beats the heartbeat of the jobs in flight this often
NO_WORKER_S = 300.0  # with jobs left and no worker up for this long, the campaign stops (exit 1)
MAX_REPLACEMENTS_PER_SLOT = 5  # lost workers replaced, per slot, before the campaign goes on without


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise CampaignError("--backend ray needs Ray: pip install 'kernellab[ray]' (the optional extra 'ray')") \
            from None
    return ray


class RayNodeWorker:
    """The actor: a ``remote.NodeWorker`` on the node and GPU Ray gave it."""

    def __init__(self, interpret: bool, lock_scope: str, shared_by: int) -> None:
        import ray

        from kernellab.evaluate.gpu_sharing import SHARED_BY_ENV
        from kernellab.run.remote import NodeWorker

        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        gpu = None
        if interpret:
            os.environ["CUDA_VISIBLE_DEVICES"] = ""
        else:
            ids = ray.get_gpu_ids()
            gpu = int(ids[0]) if ids else None
            os.environ[SHARED_BY_ENV] = str(shared_by)
        node = f"{socket.gethostname()}:{ray.get_runtime_context().get_node_id()[:8]}"
        self.worker = NodeWorker(interpret=interpret, gpu=gpu, node=node, lock_scope=lock_scope,
                                 resolve=_resolve)

    def where(self) -> dict[str, Any]:
        return self.worker.where()

    def run(self, payload: Any) -> Any:
        return self.worker.run(payload)


def _resolve(value: Any) -> Any:
    import ray

    return ray.get(value) if isinstance(value, ray.ObjectRef) else value


@dataclass
class _Slot:
    name: str
    actor: Any
    ready: Any  # the ``where`` call, until answered
    node: str | None = None
    gpu: int | None = None
    job: Any = None  # the JobRecord in flight
    call: Any = None  # its ``run`` call

    @property
    def label(self) -> str:
        return f"{self.name}@{self.node}"


class RayBackend:
    name = "ray"

    def __init__(self, slots: Sequence[WorkerSlot], *, interpret: bool, address: str | None = None,
                 init_options: dict[str, Any] | None = None, lock_scope: str = "evaluation") -> None:
        self.ray = import_ray()
        self.lock_scope = lock_scope
        self.slots = list(slots)
        self.interpret = interpret
        self.address = address
        self.init_options = dict(init_options or {})
        self.lost: list[dict[str, Any]] = []

    def run(self, run_dir: Path, tick: Callable[[], None] | None = None, poll_s: float = 0.5) -> dict[str, int]:
        """Run the campaign's pending jobs on the cluster; returns per worker 0, or 1 if it was lost."""
        ray = self.ray
        started_here = not ray.is_initialized()
        if started_here:
            # No address: a cluster of its own ("local"), never one a ``ray_current_cluster`` file
            # names (a dead local cluster leaves it behind, and joining it hangs for minutes).
            address = self.address or os.environ.get("RAY_ADDRESS") or "local"
            ray.init(address=address, log_to_driver=False, **self.init_options)
        try:
            return _Driver(self, run_dir, tick, poll_s).run()
        finally:
            if started_here:
                ray.shutdown()


class _Driver:
    """One run of the Ray backend: the store, the workers, the jobs in flight."""

    def __init__(self, backend: RayBackend, run_dir: Path, tick: Callable[[], None] | None, poll_s: float) -> None:
        from kernellab.run.queue import JobQueue
        from kernellab.score.store import Store

        self.b, self.ray, self.tick, self.poll_s = backend, backend.ray, tick, poll_s
        self.run_dir = run_dir.resolve()
        self.store = Store.open(self.run_dir, create=False)
        self.queue = JobQueue(self.store)  # the driver alone claims: its workers hold no store
        self.record = self.store.latest_run()
        self.spec = campaign_spec(self.record)
        self.spec_ref = self.ray.put(self.spec)
        self.tasks: dict[str, Any] = {}  # task ref -> object ref of its TaskBundle
        self.shipped: dict[str, dict[str, Any]] = {}  # agent -> option -> object ref of its Bundle
        self.slots: list[_Slot] = []
        self.status: dict[str, int] = {}
        self.generation = 0
        self.actor_cls = self.ray.remote(RayNodeWorker)
        self.gpu_share, self.shared_by = self._gpu_share()

    def _gpu_share(self) -> tuple[float, int]:
        if self.b.interpret:
            return 0.0, 1
        total = float(self.ray.cluster_resources().get("GPU", 0))
        if total <= 0:
            raise CampaignError("the Ray cluster has no GPU; run with --device cpu (the Triton interpreter)")
        k = len(self.b.slots)
        if k <= total:
            return 1.0, 1
        share = math.floor(total / k * 10000) / 10000
        return share, max(1, round(1 / share))

    def _start(self, name: str) -> _Slot:
        actor = self.actor_cls.options(num_cpus=1, num_gpus=self.gpu_share, max_restarts=0, max_task_retries=0,
                                       scheduling_strategy="SPREAD", name=None).remote(
            self.b.interpret, self.b.lock_scope, self.shared_by)
        slot = _Slot(name, actor, actor.where.remote())
        self.slots.append(slot)
        return slot

    def run(self) -> dict[str, int]:
        try:
            for slot in self.b.slots:
                self._start(slot.name)
            self._loop()
        except KeyboardInterrupt:
            for slot in self.slots:
                if slot.job is not None:
                    self.queue.requeue(slot.job)
                    slot.job = None
            raise
        finally:
            for slot in self.slots:
                self._kill(slot)
            self.store.close()
        return self.status

    def _loop(self) -> None:
        beat = time.monotonic()
        last_worker = time.monotonic()
        while True:
            for slot in list(self.slots):
                if slot.node is not None and slot.job is None:
                    self._dispatch(slot)
            busy = [s for s in self.slots if s.job is not None]
            counts = self.store.status_counts(self.record.id)
            if not busy and not counts.get("pending", 0):
                return
            if any(s.node is not None for s in self.slots):
                last_worker = time.monotonic()
            elif time.monotonic() - last_worker > NO_WORKER_S:
                log.warning("no Ray worker is up for %.0f s with %s jobs pending: stopping", NO_WORKER_S,
                            counts.get("pending", 0))
                return
            calls = {id(s): s for s in self.slots}
            waiting = [s.call for s in busy] + [s.ready for s in self.slots if s.node is None and s.ready]
            if waiting:
                done, _ = self.ray.wait(waiting, num_returns=len(waiting), timeout=self.poll_s, fetch_local=False)
                done_ids = {ref for ref in done}
                for slot in list(calls.values()):
                    if slot.ready is not None and slot.ready in done_ids:
                        self._ready(slot)
                    elif slot.call is not None and slot.call in done_ids:
                        self._returned(slot)
            else:
                time.sleep(self.poll_s)
            if time.monotonic() - beat > HEARTBEAT_S:
                beat = time.monotonic()
                for s in self.slots:
                    if s.job is not None:
                        self.queue.heartbeat(s.job)
            if self.tick is not None:
                self.tick()

    def _ready(self, slot: _Slot) -> None:
        ref, slot.ready = slot.ready, None
        try:
            where = self.ray.get(ref)
        except self.ray.exceptions.RayError as exc:
            log.warning("ray worker %s did not start: %s", slot.name, _first_line(exc))
            self._replace(slot)
            return
        slot.node, slot.gpu = where["node"], where["gpu"]
        log.info("ray worker %s is up on %s (gpu %s)", slot.name, slot.node, slot.gpu)

    def _dispatch(self, slot: _Slot) -> None:
        from kernellab.run.job import (
            SolveEnd,
            _finished_solve,
            _started_solve,
            job_dir,
            record_solve,
        )
        from kernellab.run.payload import JobPayload, pack_bytes

        while True:
            job = self.queue.claim(slot.label, gpu=None if slot.gpu is None else str(slot.gpu),
                                   run_id=self.record.id)
            if job is None:
                return
            out = job_dir(self.run_dir, job)
            finished = _finished_solve(out)
            if finished is None:
                break
            record_solve(self.store, job, out, SolveEnd(finished))  # unpacked before the driver died
        previous = pack_bytes(out) if _started_solve(out) else None
        try:
            payload = JobPayload(job.id, out.name, job.agent, job.seed, self.spec_ref, self._task(job.task_id),
                                 self._shipped(job.agent), self.b.interpret, previous, job.tries)
        except Exception as exc:  # noqa: BLE001 — files of the driver that cannot be packed: the job's error
            record_solve(self.store, job, out, SolveEnd("error", f"{type(exc).__name__}: {exc}"))
            return
        slot.job, slot.call = job, slot.actor.run.remote(payload)

    def _task(self, ref: str) -> Any:
        from kernellab.run.payload import TaskBundle

        if ref not in self.tasks:
            self.tasks[ref] = self.ray.put(TaskBundle.of(ref))
        return self.tasks[ref]

    def _shipped(self, agent: str) -> dict[str, Any]:
        from kernellab.agents.base import registered
        from kernellab.run.payload import shipped_options

        if agent not in self.shipped:
            _, bundles = shipped_options(registered()[agent], self.spec.options_for(agent))
            self.shipped[agent] = {k: self.ray.put(v) for k, v in bundles.items()}
        return self.shipped[agent]

    def _returned(self, slot: _Slot) -> None:
        from kernellab.run.job import SolveEnd, job_dir, record_solve
        from kernellab.run.payload import unpack_bytes

        job, call = slot.job, slot.call
        slot.job = slot.call = None
        try:
            back = self.ray.get(call)
        except self.ray.exceptions.RayError as exc:
            self._lost(slot, job, exc)
            return
        out = job_dir(self.run_dir, job)
        shutil.rmtree(out, ignore_errors=True)
        if back.solve is not None:
            unpack_bytes(back.solve, out)
        record_solve(self.store, job, out, SolveEnd(back.status, back.error))

    def _lost(self, slot: _Slot, job: Any, exc: Exception) -> None:
        """The call failed: the worker died (its process, or its node) or raised."""
        actor_gone = isinstance(exc, self.ray.exceptions.RayActorError)
        error = f"{type(exc).__name__}: {_first_line(exc)}"
        entry = {"try": job.tries, "worker": slot.name, "node": slot.node, "gpu": slot.gpu, "error": error}
        self.b.lost.append({"job": job.key, **entry})
        log.warning("job %s (%s) try %s: worker %s lost (%s)", job.id, job.key, job.tries, slot.label, error)
        with self.store.transaction():
            self.store.record_event(job, "worker_lost", entry)
            if job.tries >= MAX_TRIES:
                self.queue.finish(job, "failed", f"its worker was lost {job.tries} times; last: {error}")
            else:
                self.queue.requeue(job)
        if actor_gone:
            self._replace(slot)

    def _replace(self, slot: _Slot) -> None:
        self.status[slot.name] = 1
        self._kill(slot)
        self.slots.remove(slot)
        if self.generation >= MAX_REPLACEMENTS_PER_SLOT * len(self.b.slots):
            log.warning("%s Ray workers were lost: %s is not replaced", self.generation, slot.name)
            return
        self.generation += 1
        self._start(f"{slot.name.split('.')[0]}.{self.generation}")

    def _kill(self, slot: _Slot) -> None:
        self.status.setdefault(slot.name, 0)
        try:
            self.ray.kill(slot.actor, no_restart=True)
        except Exception as exc:  # noqa: BLE001 — an actor already gone cannot be killed
            log.debug("ray kill %s: %s", slot.name, exc)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
