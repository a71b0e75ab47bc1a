"""The results store under several real processes: two creating one new store at once. (Workers
claiming jobs, and one killed with SIGKILL mid-write: tests/run/test_queue_processes.py.)"""

from __future__ import annotations

import multiprocessing
import os

from kernellab.score import Store

SPAWN = multiprocessing.get_context("spawn")


def open_fresh(run_dir: str, start) -> None:
    start.wait(30)
    with Store.open(run_dir) as store:  # both processes create and migrate the same new file
        store.create_run({"by": os.getpid()}, confined=False)


def test_two_processes_creating_one_store_at_once(tmp_path):
    start = SPAWN.Barrier(2)
    procs = [SPAWN.Process(target=open_fresh, args=(str(tmp_path / "new"), start)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    with Store.open(tmp_path / "new") as store:
        assert sorted(r.config["by"] for r in store.runs()) == sorted(p.pid for p in procs)
        assert store.integrity_check() == "ok"
