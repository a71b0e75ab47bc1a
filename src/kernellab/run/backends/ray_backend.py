"""The Ray backend (optional extra ``ray``: ``pip install 'kernellab[ray]'``): the same workers and
jobs as the local backend, each worker a Ray task holding one GPU (``num_gpus=1``; Ray sets
``CUDA_VISIBLE_DEVICES``), or a CPU under the Triton interpreter.

Every worker opens the campaign's results store itself, so ``RUN_DIR`` must be on a filesystem every
Ray node sees at the same path (and one where SQLite's locking works: a local disk for a one-node
cluster, a POSIX-locking shared filesystem otherwise). Jobs of workers on other nodes are reset on
``--resume`` by their heartbeat's age (``campaign.STALE_AFTER_S``), since their processes cannot be seen here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kernellab.run.campaign import CampaignError
from kernellab.run.scheduler import WorkerSlot

log = logging.getLogger(__name__)

def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise CampaignError("--backend ray needs Ray: pip install 'kernellab[ray]' (the optional extra 'ray')") \
            from None
    return ray


def _remote_worker(run_dir: str, name: str, interpret: bool, lock_scope: str = "evaluation") -> int:
    """Runs on a Ray worker: the ordinary worker loop, on the GPU Ray gave this task."""
    import ray

    from kernellab.run.worker import work

    gpu = None
    if not interpret:
        ids = ray.get_gpu_ids()
        gpu = int(ids[0]) if ids else None
    return work(Path(run_dir), name, gpu=gpu, interpret=interpret, lock_scope=lock_scope)


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
        self._refs: list[Any] = []

    def run(self, run_dir: Path, tick: Callable[[], None] | None = None, poll_s: float = 0.5) -> dict[str, int]:
        ray = self.ray
        started_here = not ray.is_initialized()
        if started_here:
            ray.init(address=self.address, log_to_driver=False, **self.init_options)
        try:
            remote = ray.remote(num_gpus=0 if self.interpret else 1, num_cpus=1, max_retries=0)(_remote_worker)
            refs = {slot.name: remote.remote(str(run_dir.resolve()), slot.name, self.interpret, self.lock_scope)
                    for slot in self.slots}
            self._refs = list(refs.values())
            pending = list(refs.values())
            while pending:
                _, pending = ray.wait(pending, num_returns=len(pending), timeout=poll_s)
                if tick is not None:
                    tick()
            out = {}
            for name, ref in refs.items():
                try:
                    out[name] = 0 if ray.get(ref) is not None else 1
                except Exception as exc:  # noqa: BLE001 — a worker that raised: its job is reset on --resume
                    log.warning("ray worker %s failed: %s", name, exc)
                    out[name] = 1
            return out
        except KeyboardInterrupt:
            self.stop()
            raise
        finally:
            if started_here:
                ray.shutdown()

    def stop(self) -> None:
        for ref in self._refs:
            try:
                self.ray.cancel(ref)  # KeyboardInterrupt in the task: the worker requeues its job
            except Exception as exc:  # noqa: BLE001 — a task already gone cannot be cancelled
                log.debug("ray cancel: %s", exc)
        deadline = time.monotonic() + 30.0
        pending = list(self._refs)
        while pending and time.monotonic() < deadline:
            _, pending = self.ray.wait(pending, num_returns=len(pending), timeout=1.0)
