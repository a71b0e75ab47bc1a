"""The trajectory of a solve: every proposal, its verdict, what it cost and what was decided.

Written twice, as it happens:

- ``OUT/trajectory.jsonl``: one JSON object a line, in order: ``run`` (what was asked), ``start``
  (the starting kernel and its verdict), one ``iteration`` per proposal, ``kept`` (a decision taken
  after the fact, e.g. the winner of best-of-n), ``stop``, ``final`` (the full verdict), and
  ``interrupted`` / ``error`` / ``result``;
- the results store ``OUT/results.sqlite`` (``kernellab.score.Store``): one run with one job; each
  proposal is an attempt (its kernel an artifact, its verdict and timings, tokens, cost, steps,
  wall time, ``kept``), each JSONL line also an event of the job, and the final verdict an attempt
  marked ``final``. A committed attempt survives the death of the process, so an interrupted solve
  loses no completed iteration.

An ``iteration`` record holds: ``iteration``, ``candidate`` and ``parent`` ids (``c0`` is the
starting kernel), ``others`` (crossover parents), ``operator`` and ``instructions``, ``seed``,
``time`` (UTC), ``proposal`` (the agent's note, whether it timed out, its transcript, the kernel's
sha256 and artifact), ``usage`` (tokens, cost, steps, wall seconds), ``checks`` (the agent's own
``./check`` runs during the proposal), ``confined``, ``verifier`` (a prediction, if a verifier ran),
``skipped``, ``evaluation`` (``search`` | ``full`` | null) and ``eval_s``, ``verdict`` (a summary)
and ``verdict_full`` (the whole document; JSONL only, the store keeps it in its verdicts table),
``decision``, ``reason``, ``kept``, ``improved`` and ``best`` (the best candidate after it).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from kernellab.evaluate.verdict import Verdict
from kernellab.score.artifacts import job_dir_name, write_artifact
from kernellab.score.from_store import attempt_points_from_store
from kernellab.score.iterations import per_iteration
from kernellab.score.jsonable import json_ready
from kernellab.score.store import Store
from kernellab.score.store_records import (
    AttemptRecord,
    AttemptUsage,
    JobRecord,
    JobSpec,
    JobStatus,
    RunRecord,
)

log = logging.getLogger(__name__)

TRAJECTORY_FILE = "trajectory.jsonl"


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class Trajectory:
    """The JSONL file and the store of one solve's job. Use :meth:`create` (a new run) or
    :meth:`resume` (the unfinished job of an earlier solve in the same folder).

    The solve's store is its own (``OUT/results.sqlite``), holding one run with one job: the solve
    records where that job stands (``Store.set_job_status``) and never takes a job from a queue.
    In a campaign, the run layer claims the campaign's job (``kernellab.run.queue``) before calling
    the solve, and copies the solve's attempts into it after."""

    def __init__(self, out_dir: Path, store: Store, run: RunRecord, job: JobRecord) -> None:
        self.out_dir = out_dir
        self.store = store
        self.run = run
        self.job = job
        self.path = out_dir / TRAJECTORY_FILE
        self._file: TextIO = self.path.open("a", encoding="utf-8")

    # -------------------------------------------------------------------------------- opening

    @classmethod
    def create(cls, out_dir: Path, spec: JobSpec, config: Mapping[str, Any], *, device: str | None,
               confined: bool) -> Trajectory:
        store = Store.open(out_dir)
        try:
            run = store.create_run(config, device=device, confined=confined)
            (job,) = store.add_jobs(run.id, [spec])
            job = store.set_job_status(job, JobStatus.RUNNING)
        except BaseException:
            store.close()
            raise
        return cls(out_dir, store, run, job)

    @classmethod
    def resume(cls, out_dir: Path, store: Store, run: RunRecord, job: JobRecord) -> Trajectory:
        if job.status is not JobStatus.RUNNING:
            job = store.set_job_status(job, JobStatus.RUNNING)
        return cls(out_dir, store, run, job)

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()
        self.store.close()

    # -------------------------------------------------------------------------------- writing

    def write(self, kind: str, **fields: Any) -> dict[str, Any]:
        """One JSONL line (not the store)."""
        record = {"kind": kind, "time": utc_now(), **fields}
        self._file.write(json.dumps(json_ready(record), default=str, allow_nan=False) + "\n")
        self._file.flush()
        return record

    def event(self, kind: str, **fields: Any) -> dict[str, Any]:
        """One JSONL line and the same as an event of the job in the store."""
        record = self.write(kind, **fields)
        self.store.record_event(self.job, kind, {k: v for k, v in record.items() if k != "kind"})
        return record

    @property
    def job_dir(self) -> str:
        j = self.job
        return job_dir_name(j.id, j.task_id, j.agent, j.seed, j.strategy)

    def save_kernel(self, source: str) -> tuple[str, Path]:
        """The kernel as a content-addressed artifact (the file the store's attempt will name);
        returns its sha256 and absolute path, outside the workspace."""
        sha, relative = write_artifact(self.out_dir, self.job_dir, source, ".py")
        return sha, (self.out_dir / relative).resolve()

    def save_log(self, content: str | bytes, suffix: str = ".log") -> str:
        return self.store.save_artifact(self.job, content, suffix)

    def record_iteration(self, record: dict[str, Any], *, source: str | None, verdict: Verdict | None,
                         usage: AttemptUsage, kept: bool) -> AttemptRecord:
        """One proposal: the attempt (kernel, verdict, cost, kept) and its event, then the JSONL line."""
        note = f"{record.get('decision')}: {record.get('reason')}"[:2000]
        attempt = self.store.record_attempt(self.job, source, verdict, iteration=record["iteration"], usage=usage,
                                            kept=kept, note=note)
        record["attempt_id"] = attempt.id
        full = verdict.to_dict() if verdict is not None else None
        line = self.write("iteration", **record, verdict_full=full)
        self.store.record_event(self.job, "iteration", {k: v for k, v in line.items()
                                                        if k not in ("kind", "verdict_full")})
        return attempt

    def mark_kept(self, attempt_id: int, **fields: Any) -> None:
        self.store.set_attempt_flags(attempt_id, kept=True)
        self.event("kept", attempt_id=attempt_id, **fields)

    def record_final(self, source: str, verdict: Verdict, *, iteration: int, note: str,
                     **fields: Any) -> AttemptRecord:
        attempt = self.store.record_attempt(self.job, source, verdict, iteration=iteration, usage=AttemptUsage(),
                                            kept=False, final=True, note=note[:2000])
        line = self.write("final", attempt_id=attempt.id, iteration=iteration, note=note, verdict_full=verdict.to_dict(),
                          **fields)
        self.store.record_event(self.job, "final", {k: v for k, v in line.items() if k not in ("kind", "verdict_full")})
        return attempt

    def finish(self, status: str, error: str | None = None) -> None:
        self.job = self.store.finish_job(self.job, status, error)

    def requeue(self) -> None:
        """Leave the job resumable (``pending``), its attempts kept."""
        self.job = self.store.set_job_status(self.job, JobStatus.PENDING)


# ------------------------------------------------------------------------------------ reading


def read_trajectory(path: Path) -> list[dict[str, Any]]:
    """The records of a ``trajectory.jsonl`` (a folder holding one is accepted too); a last line
    cut short by a killed process is skipped."""
    path = Path(path)
    if path.is_dir():
        path = path / TRAJECTORY_FILE
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            log.warning("%s: skipping a line that is not JSON (a write cut short?)", path)
    return records


def iterations(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for r in records if r.get("kind") == "iteration"]


def iteration_table(out_dir: Path) -> list[dict[str, Any]]:
    """Per-iteration compile rate, correctness and best speedup so far, from the solve's store
    (``kernellab.score.per_iteration``)."""
    with Store.open(out_dir, create=False) as store:
        return per_iteration(attempt_points_from_store(store))
