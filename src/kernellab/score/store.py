"""The results store: one SQLite database per run directory (``RUN_DIR/results.sqlite``) plus
content-addressed artifacts beside it (``RUN_DIR/artifacts/<job>/<sha256>.py``).

Durability and concurrency:

- WAL journal, ``synchronous=NORMAL``: a committed transaction survives the death of the process
  that wrote it (SIGKILL included); only an OS crash or power loss can drop the last few commits,
  never corrupt the file. Readers never block writers.
- Every write is one short ``BEGIN IMMEDIATE`` transaction (``Store.transaction``); an attempt, its
  verdict and its timings are written together or not at all. Several processes may write: a
  writer waits for the lock up to ``BUSY_TIMEOUT_S``.
- The store records jobs and where each stands (``add_jobs``, ``set_job_status``); the campaign's
  queue over them (claiming a job atomically, heartbeats, requeueing the jobs of dead workers) is
  the run layer's, ``kernellab.run.queue``.
- One ``Store`` per process (and thread); open it again in a child process rather than passing it.

The schema is versioned (``meta.schema_version``, migrations in ``kernellab.score.schema``) and
documented in docs/scoring.md, "Results store".
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import logging
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from kernellab.score.artifacts import job_dir_name, write_artifact
from kernellab.score.jsonable import dumps, json_ready
from kernellab.score.schema import JOB_STATUSES, MIGRATIONS, SCHEMA_VERSION
from kernellab.score.store_records import (
    AttemptRecord,
    AttemptUsage,
    EventRecord,
    JobRecord,
    JobSpec,
    JobStatus,
    RunRecord,
)

if TYPE_CHECKING:
    from kernellab.evaluate.verdict import Verdict

log = logging.getLogger(__name__)

DB_NAME = "results.sqlite"
# How long a writer waits for another process's transaction. Transactions here last milliseconds;
# 60 s only matters when a disk stalls, and then waiting beats failing a job.
BUSY_TIMEOUT_S = 60.0

_ATTEMPTS_QUERY = """
    SELECT a.*, v.id AS verdict_id, v.verdict AS verdict
    FROM attempts a JOIN jobs j ON j.id = a.job_id LEFT JOIN verdicts v ON v.attempt_id = a.id
"""


class StoreError(RuntimeError):
    """The results store cannot be used as asked (one line, meant for the user)."""


class SchemaVersionError(StoreError):
    pass


def now() -> str:
    """UTC timestamp in one fixed ISO-8601 format, so timestamps compare correctly as text."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


class Store:
    def __init__(self, run_dir: Path, connection: sqlite3.Connection) -> None:
        self.run_dir = run_dir
        self.path = run_dir / DB_NAME
        self._conn = connection

    # -- opening ---------------------------------------------------------------------------------

    @classmethod
    def open(cls, run_dir: str | os.PathLike[str], *, create: bool = True) -> Store:
        """Open (by default creating) the store of ``run_dir``, upgrading an older schema in place."""
        run_dir = Path(run_dir)
        path = run_dir / DB_NAME
        if not path.exists():
            if not create:
                raise StoreError(f"no results store in {run_dir} (expected {DB_NAME})")
            run_dir.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        conn.row_factory = sqlite3.Row
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            mode = _set_wal(conn)
            if str(mode).lower() != "wal":
                raise StoreError(f"{path}: SQLite could not use WAL mode here (got {mode!r}); "
                                 f"put the run directory on a local filesystem")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            store = cls(run_dir, conn)
            store._migrate()
        except sqlite3.DatabaseError as e:
            conn.close()
            raise StoreError(f"{path}: not a usable results store ({e})") from e
        except BaseException:
            conn.close()
            raise
        return store

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _migrate(self) -> None:
        version = self._schema_version()
        if version == SCHEMA_VERSION:
            return
        with self.transaction() as c:
            c.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            version = self._schema_version()  # another process may have migrated meanwhile
            if version > SCHEMA_VERSION:
                raise SchemaVersionError(
                    f"{self.path} has schema version {version}, newer than the {SCHEMA_VERSION} this "
                    f"kernellab knows; use a newer kernellab to read it")
            for statements in MIGRATIONS[version:]:
                for statement in statements:
                    c.execute(statement)
            c.execute("INSERT INTO meta (key, value) VALUES ('schema_version', ?) "
                      "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (str(SCHEMA_VERSION),))
            c.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('created', ?)", (now(),))
            if version:
                log.info("results store %s upgraded from schema %d to %d", self.path, version, SCHEMA_VERSION)

    def _schema_version(self) -> int:
        with self.snapshot() as c:  # one consistent view: another process may be migrating right now
            tables = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "meta" not in tables:
                if tables:
                    raise StoreError(f"{self.path} is an SQLite database but not a kernellab results store")
                return 0
            row = c.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        try:
            return int(row[0]) if row else 0
        except ValueError:
            raise SchemaVersionError(f"{self.path}: unreadable schema version {row[0]!r}") from None

    @property
    def schema_version(self) -> int:
        return self._schema_version()

    # -- transactions ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``: takes the write lock at once, so what is read
        inside it cannot change before the commit). Nested use joins the outer transaction."""
        if self._conn.in_transaction:
            yield self._conn
            return
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every query inside sees the same committed state."""
        if self._conn.in_transaction:
            yield self._conn
            return
        self._conn.execute("BEGIN DEFERRED")
        try:
            yield self._conn
        finally:
            self._conn.execute("COMMIT")

    # -- runs and jobs ---------------------------------------------------------------------------

    def create_run(self, config: Mapping[str, Any], *, device: str | None = None,
                   versions: Mapping[str, str | None] | None = None, confined: bool) -> RunRecord:
        """Record a new run. ``versions`` defaults to the installed kernellab, torch and triton."""
        v = {**installed_versions(), **(versions or {})}
        with self.transaction() as c:
            cur = c.execute(
                "INSERT INTO runs (created, config, device, kernellab_version, torch_version, triton_version, "
                "confined) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (now(), dumps(dict(config)), device, v.get("kernellab"), v.get("torch"), v.get("triton"),
                 int(confined)))
            return self.run(cur.lastrowid)

    def run(self, run_id: int) -> RunRecord:
        row = self._conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise StoreError(f"{self.path}: no run {run_id}")
        return RunRecord.from_row(row)

    def runs(self) -> list[RunRecord]:
        return [RunRecord.from_row(r) for r in self._conn.execute("SELECT * FROM runs ORDER BY id")]

    def latest_run(self) -> RunRecord | None:
        row = self._conn.execute("SELECT * FROM runs ORDER BY id DESC LIMIT 1").fetchone()
        return RunRecord.from_row(row) if row else None

    def add_jobs(self, run_id: int, specs: Iterable[JobSpec]) -> list[JobRecord]:
        """Add jobs to a run; a job already there (same task, agent, seed, strategy) is left as it is.
        Returns the jobs for ``specs``, in order, new or existing."""
        specs = list(specs)
        with self.transaction() as c:
            c.executemany(
                "INSERT INTO jobs (run_id, task_id, agent, seed, strategy, category, kind) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (run_id, task_id, agent, seed, strategy) DO NOTHING",
                [(run_id, s.task_id, s.agent, s.seed, s.strategy, s.category, s.kind.value) for s in specs])
            return [JobRecord.from_row(c.execute(
                "SELECT * FROM jobs WHERE run_id = ? AND task_id = ? AND agent = ? AND seed = ? AND strategy = ?",
                (run_id, s.task_id, s.agent, s.seed, s.strategy)).fetchone()) for s in specs]

    def job(self, job: JobRecord | int) -> JobRecord:
        job_id = job.id if isinstance(job, JobRecord) else job
        row = self._conn.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            raise StoreError(f"{self.path}: no job {job_id}")
        return JobRecord.from_row(row)

    def jobs(self, run_id: int | None = None, status: str | None = None) -> list[JobRecord]:
        sql, args = "SELECT * FROM jobs WHERE 1 = 1", []
        if run_id is not None:
            sql, args = sql + " AND run_id = ?", [*args, run_id]
        if status is not None:
            sql, args = sql + " AND status = ?", [*args, _check_status(status)]
        return [JobRecord.from_row(r) for r in self._conn.execute(sql + " ORDER BY id", args)]

    def status_counts(self, run_id: int | None = None) -> dict[str, int]:
        counts = dict.fromkeys(JobStatus, 0)
        sql = "SELECT status, count(*) FROM jobs" + (" WHERE run_id = ?" if run_id is not None else "")
        for status, n in self._conn.execute(sql + " GROUP BY status", () if run_id is None else (run_id,)):
            counts[JobStatus(status)] = n
        return counts

    def set_job_status(self, job: JobRecord | int, status: str, error: str | None = None) -> JobRecord:
        """Record where a job stands: ``running`` (started now, one more try), ``done`` or ``failed``
        (finished now; ``error``: why it failed), or ``pending`` again (its start and whoever ran it
        forgotten; its attempts stay, so it can continue from them). Which job runs next, and on which
        worker, is the run layer's queue (``kernellab.run.queue``), not the store's."""
        status = JobStatus(_check_status(status))
        if error is not None and status is not JobStatus.FAILED and status is not JobStatus.DONE:
            raise ValueError(f"only a finished job has an error, not a {status.value!r} one")
        t = now()
        with self.transaction() as c:
            if status is JobStatus.RUNNING:
                c.execute("UPDATE jobs SET status = 'running', tries = tries + 1, started = ?, heartbeat = ?, "
                          "finished = NULL, error = NULL WHERE id = ?", (t, t, _id(job)))
            elif status is JobStatus.PENDING:
                c.execute("UPDATE jobs SET status = 'pending', worker = NULL, gpu = NULL, worker_host = NULL, "
                          "worker_pid = NULL, worker_started = NULL, started = NULL, heartbeat = NULL WHERE id = ?",
                          (_id(job),))
            else:
                c.execute("UPDATE jobs SET status = ?, finished = ?, error = ? WHERE id = ?",
                          (status.value, t, error, _id(job)))
            return self.job(job)

    def finish_job(self, job: JobRecord | int, status: str, error: str | None = None) -> JobRecord:
        """``set_job_status`` for the two finished statuses only (a job ends ``done`` or ``failed``)."""
        if status not in (JobStatus.DONE, JobStatus.FAILED):
            raise ValueError(f"a job finishes 'done' or 'failed', not {status!r}")
        return self.set_job_status(job, status, error)

    # -- attempts, verdicts, events ----------------------------------------------------------------

    def record_attempt(self, job: JobRecord | int, kernel_source: str | bytes | None = None,
                       verdict: Verdict | Mapping[str, Any] | None = None, *, iteration: int | None = None,
                       usage: AttemptUsage | None = None, kept: bool = False, final: bool = False,
                       note: str | None = None) -> AttemptRecord:
        """Record one attempt: its kernel (written as an artifact first), cost, and verdict with timings,
        in one transaction. ``iteration`` defaults to one past the job's last (the first is 1)."""
        job = self.job(job)
        sha = artifact = None
        if kernel_source is not None:
            sha, artifact = write_artifact(self.run_dir, _job_dir(job), kernel_source, ".py")
        vd = _verdict_dict(verdict)
        u = usage or AttemptUsage()
        with self.transaction() as c:
            if iteration is None:
                iteration = c.execute("SELECT COALESCE(MAX(iteration), 0) + 1 FROM attempts WHERE job_id = ?",
                                      (job.id,)).fetchone()[0]
            t = now()
            cur = c.execute(
                "INSERT INTO attempts (job_id, iteration, proposal_sha256, artifact, tokens_in, tokens_out, "
                "cost_usd, agent_steps, wall_s, created, kept, final, note) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (job.id, iteration, sha, artifact, u.tokens_in, u.tokens_out, u.cost_usd, u.agent_steps,
                 u.wall_s, t, int(kept), int(final), note))
            attempt_id = cur.lastrowid
            if vd is not None:
                _insert_verdict(c, attempt_id, vd)
            c.execute("UPDATE jobs SET heartbeat = ? WHERE id = ?", (t, job.id))
            return self.attempt(attempt_id)

    def set_attempt_flags(self, attempt: AttemptRecord | int, *, kept: bool | None = None,
                          final: bool | None = None) -> AttemptRecord:
        """Mark an attempt kept (the current best of a keep/revert or best-of-n search) or final (the
        verdict that scores the job) after the fact."""
        attempt_id = attempt.id if isinstance(attempt, AttemptRecord) else attempt
        with self.transaction() as c:
            if kept is not None:
                c.execute("UPDATE attempts SET kept = ? WHERE id = ?", (int(kept), attempt_id))
            if final is not None:
                c.execute("UPDATE attempts SET final = ? WHERE id = ?", (int(final), attempt_id))
            return self.attempt(attempt_id)

    def attempt(self, attempt_id: int) -> AttemptRecord:
        row = self._conn.execute(_ATTEMPTS_QUERY + " WHERE a.id = ?", (attempt_id,)).fetchone()
        if row is None:
            raise StoreError(f"{self.path}: no attempt {attempt_id}")
        return AttemptRecord.from_row(row)

    def attempts(self, job: JobRecord | int | None = None, *, run_id: int | None = None) -> list[AttemptRecord]:
        """Attempts (with their verdicts) of one job, of one run, or of the whole store, in order."""
        sql, args = _ATTEMPTS_QUERY + " WHERE 1 = 1", []
        if job is not None:
            sql, args = sql + " AND a.job_id = ?", [*args, _id(job)]
        if run_id is not None:
            sql, args = sql + " AND j.run_id = ?", [*args, run_id]
        return [AttemptRecord.from_row(r) for r in self._conn.execute(sql + " ORDER BY a.job_id, a.iteration, a.id",
                                                                      args)]

    def timings(self, verdict_id: int) -> list[dict[str, Any]]:
        rows = self._conn.execute("SELECT * FROM timings WHERE verdict_id = ? ORDER BY id", (verdict_id,))
        return [dict(r) for r in rows]

    def kernel_path(self, attempt: AttemptRecord) -> Path | None:
        return self.run_dir / attempt.artifact if attempt.artifact else None

    def save_artifact(self, job: JobRecord | int, content: str | bytes, suffix: str = ".log") -> str:
        """Store a log or other file for ``job``; returns its path relative to the run directory."""
        return write_artifact(self.run_dir, _job_dir(self.job(job)), content, suffix)[1]

    def record_event(self, job: JobRecord | int, kind: str, payload: Mapping[str, Any] | None = None) -> EventRecord:
        """Append one trajectory event (a proposal, a tool call, a keep/revert decision, ...) to a job."""
        with self.transaction() as c:
            cur = c.execute("INSERT INTO events (job_id, created, kind, payload) VALUES (?, ?, ?, ?)",
                            (_id(job), now(), kind, dumps(dict(payload or {}))))
            return EventRecord.from_row(c.execute("SELECT * FROM events WHERE id = ?", (cur.lastrowid,)).fetchone())

    def events(self, job: JobRecord | int, kind: str | None = None) -> list[EventRecord]:
        """A job's events in order; ``kind``: only those (a trajectory's payloads are not read for them)."""
        if kind is None:
            rows = self._conn.execute("SELECT * FROM events WHERE job_id = ? ORDER BY id", (_id(job),))
        else:
            rows = self._conn.execute("SELECT * FROM events WHERE job_id = ? AND kind = ? ORDER BY id",
                                      (_id(job), kind))
        return [EventRecord.from_row(r) for r in rows]

    def integrity_check(self) -> str:
        """SQLite's own check of the file: ``"ok"`` when sound."""
        return self._conn.execute("PRAGMA integrity_check").fetchone()[0]

    def settings(self) -> dict[str, Any]:
        """The connection settings this store relies on (for ``kernellab doctor`` and tests)."""
        names = ("journal_mode", "synchronous", "foreign_keys", "busy_timeout")
        return {n: self._conn.execute(f"PRAGMA {n}").fetchone()[0] for n in names}


# -- helpers -------------------------------------------------------------------------------------------


def installed_versions() -> dict[str, str | None]:
    """Versions of kernellab, torch and triton from package metadata (nothing is imported)."""
    out: dict[str, str | None] = {}
    for name in ("kernellab", "torch", "triton"):
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def _set_wal(conn: sqlite3.Connection) -> str:
    """Switch the file to WAL. SQLite answers "locked" at once, without waiting on the busy timeout,
    while another process is making the same switch on a new file; so retry until the deadline."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            return conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _id(job: JobRecord | int) -> int:
    return job.id if isinstance(job, JobRecord) else int(job)


def _job_dir(job: JobRecord) -> str:
    return job_dir_name(job.id, job.task_id, job.agent, job.seed, job.strategy)


def _check_status(status: str) -> str:
    if status not in JOB_STATUSES:
        raise ValueError(f"unknown job status {status!r}; expected one of {JOB_STATUSES}")
    return status


def _verdict_dict(verdict: Verdict | Mapping[str, Any] | None) -> dict[str, Any] | None:
    if verdict is None:
        return None
    vd = json_ready(verdict.to_dict() if hasattr(verdict, "to_dict") else dict(verdict))
    if not isinstance(vd.get("status"), str):
        raise TypeError("a verdict needs a 'status' (Verdict.to_dict() output)")
    return vd


def _flag(value: Any) -> int | None:
    return None if value is None else int(bool(value))


def _insert_verdict(c: sqlite3.Connection, attempt_id: int, vd: dict[str, Any]) -> None:
    speedup = vd.get("speedup") or {}
    holdout = vd.get("holdout") or {}
    cur = c.execute(
        "INSERT INTO verdicts (attempt_id, verdict, status, compiled, correct, failed_stage, holdout_correct, "
        "speedup_vs_eager, speedup_vs_compile, speedup_vs_baseline, holdout_speedup_vs_eager, elapsed_s) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (attempt_id, dumps(vd), vd["status"], int(bool(vd.get("compiled"))), int(bool(vd.get("correct"))),
         vd.get("failed_stage"), _flag(holdout.get("correct")), speedup.get("vs_eager"),
         speedup.get("vs_compile"), speedup.get("vs_baseline"), (holdout.get("speedup") or {}).get("vs_eager"),
         vd.get("elapsed_s")))
    rows = [(0, t) for t in vd.get("timings") or []] + [(1, t) for t in holdout.get("timings") or []]
    c.executemany(
        "INSERT INTO timings (verdict_id, holdout, config, dtype, phase, method, candidate_us, eager_us, "
        "compile_us, baseline_us, speedup_vs_eager, speedup_vs_compile, speedup_vs_baseline, pct_of_roofline, "
        "peak_mem_bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(cur.lastrowid, h, t.get("config", ""), t.get("dtype", ""), t.get("phase", "forward"), t.get("method"),
          t.get("candidate_us"), t.get("eager_us"), t.get("compile_us"), t.get("baseline_us"),
          t.get("speedup_vs_eager"), t.get("speedup_vs_compile"), t.get("speedup_vs_baseline"),
          t.get("pct_of_roofline"), t.get("peak_mem_bytes")) for h, t in rows])
