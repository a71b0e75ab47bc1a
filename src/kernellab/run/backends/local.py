"""The local backend: one worker process per slot on this machine.

Each worker is ``python -m kernellab.run.worker`` in its own session (so a terminal's Ctrl-C reaches
only the orchestrator, which forwards one SIGINT to each worker), with ``CUDA_VISIBLE_DEVICES``
naming its GPU (or empty, under the Triton interpreter), its log in ``RUN_DIR/logs/<worker>.log``,
and a watch on the orchestrator: if the orchestrator is killed, the workers end too, and
``--resume`` puts their jobs back to pending.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from kernellab.evaluate.gpu_sharing import SHARED_BY_ENV
from kernellab.run.scheduler import WorkerSlot, physical_gpu

log = logging.getLogger(__name__)

LOGS_DIR = "logs"
STOP_GRACE_S = 60.0  # after Ctrl-C, how long workers get to record what they did before SIGKILL


class LocalBackend:
    name = "local"

    def __init__(self, slots: Sequence[WorkerSlot], *, interpret: bool, debug: bool = False,
                 lock_scope: str = "evaluation") -> None:
        self.slots = list(slots)
        self.interpret = interpret
        self.debug = debug
        self.lock_scope = lock_scope
        self.procs: dict[str, subprocess.Popen] = {}

    def command(self, run_dir: Path, slot: WorkerSlot) -> list[str]:
        argv = [sys.executable, "-m", "kernellab.run.worker", str(run_dir), "--name", slot.name,
                "--watch-parent", str(os.getpid())]
        if slot.gpu is not None and not self.interpret:
            argv += ["--gpu", str(slot.gpu), "--lock-scope", self.lock_scope]
        if self.interpret:
            argv.append("--interpret")
        if self.debug:
            argv.append("--debug")
        return argv

    def environment(self, slot: WorkerSlot) -> dict[str, str]:
        env = dict(os.environ)
        # --gpus counts the GPUs this process sees, as torch does: slot 1 under CUDA_VISIBLE_DEVICES=2,3 is GPU 3
        env["CUDA_VISIBLE_DEVICES"] = "" if self.interpret or slot.gpu is None else physical_gpu(slot.gpu)
        env["PYTHONUNBUFFERED"] = "1"
        if slot.gpu is not None and not self.interpret:  # its share of the GPU's memory for kept cases
            env[SHARED_BY_ENV] = str(sum(1 for s in self.slots if s.gpu == slot.gpu))
        return env

    def run(self, run_dir: Path, tick: Callable[[], None] | None = None, poll_s: float = 0.5) -> dict[str, int]:
        """Start the workers, call ``tick`` while they run, and return their exit statuses. Ctrl-C
        (KeyboardInterrupt) stops them cleanly and is raised again once they are gone."""
        logs = run_dir / LOGS_DIR
        logs.mkdir(exist_ok=True)
        try:
            for slot in self.slots:
                with open(logs / f"{slot.name}.log", "ab") as out:
                    self.procs[slot.name] = subprocess.Popen(
                        self.command(run_dir, slot), env=self.environment(slot), stdout=out,
                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
            while any(p.poll() is None for p in self.procs.values()):
                if tick is not None:
                    tick()
                time.sleep(poll_s)
        except KeyboardInterrupt:
            self.stop()
            raise
        except BaseException:
            self.stop(grace_s=0)
            raise
        return {name: p.returncode for name, p in self.procs.items()}

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGINT to each live worker (it requeues its job), then SIGKILL to its group after ``grace_s``."""
        for p in self.procs.values():
            if p.poll() is None and grace_s > 0:
                p.send_signal(signal.SIGINT)  # the worker only: the solve's own processes stay up to finish
        deadline = time.monotonic() + grace_s
        for p in self.procs.values():
            try:
                p.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            if p.poll() is None:
                _signal_group(p, signal.SIGKILL)
                p.wait()


def _signal_group(p: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(p.pid, sig)
    except ProcessLookupError:
        pass
