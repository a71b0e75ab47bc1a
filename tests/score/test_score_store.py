"""The results store on a real SQLite file: settings, schema versions, jobs, attempts, artifacts."""

from __future__ import annotations

import hashlib
import json
import sqlite3

import pytest

from kernellab.score import (
    AttemptUsage,
    JobSpec,
    SchemaVersionError,
    Store,
    StoreError,
    TaskKind,
)
from kernellab.score.schema import SCHEMA_VERSION
from kernellab.score.store import DB_NAME

SPECS = [JobSpec("norm/rmsnorm", "claude", 0, "single", "normalization"),
         JobSpec("norm/rmsnorm", "claude", 1, "single", "normalization"),
         JobSpec("gemm/int8", "codex", 0, "keep-revert", "gemm", TaskKind.KERNEL_TO_KERNEL)]


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path / "run") as s:
        yield s


@pytest.fixture
def run(store):
    return store.create_run({"tasks": ["norm/rmsnorm"], "budget": "30m"}, device="cpu", confined=False)


def raw(store: Store) -> sqlite3.Connection:
    """A second, independent connection: what another process would see."""
    return sqlite3.connect(store.path)


# -- opening ----------------------------------------------------------------------------------------------


def test_settings_wal_normal_foreign_keys(store):
    s = store.settings()
    assert s["journal_mode"] == "wal"
    assert s["synchronous"] == 1  # NORMAL
    assert s["foreign_keys"] == 1
    assert s["busy_timeout"] >= 10_000
    # WAL is a property of the file: a fresh connection sees it too
    assert raw(store).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.integrity_check() == "ok"


def test_schema_version_recorded(store):
    assert store.schema_version == SCHEMA_VERSION
    value = raw(store).execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    assert int(value) == SCHEMA_VERSION


def test_reopening_keeps_data_and_version(tmp_path):
    with Store.open(tmp_path) as s:
        run = s.create_run({}, confined=True)
        s.add_jobs(run.id, SPECS)
    with Store.open(tmp_path) as s:
        assert s.schema_version == SCHEMA_VERSION
        assert len(s.jobs(run.id)) == 3
        assert s.run(run.id).confined is True


def test_newer_schema_is_refused_with_a_clear_error(tmp_path):
    Store.open(tmp_path).close()
    con = sqlite3.connect(tmp_path / DB_NAME)
    con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    with pytest.raises(SchemaVersionError, match=r"schema version 99, newer than the 1"):
        Store.open(tmp_path)


def test_empty_meta_is_migrated_from_version_zero(tmp_path):
    con = sqlite3.connect(tmp_path / DB_NAME)
    con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    con.commit()
    con.close()
    with Store.open(tmp_path) as s:
        assert s.schema_version == SCHEMA_VERSION
        assert s.jobs() == []


def test_foreign_database_is_refused(tmp_path):
    con = sqlite3.connect(tmp_path / DB_NAME)
    con.execute("CREATE TABLE notes (x)")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="not a kernellab results store"):
        Store.open(tmp_path)


def test_garbage_file_is_refused(tmp_path):
    (tmp_path / DB_NAME).write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a usable results store"):
        Store.open(tmp_path)


def test_open_without_create(tmp_path):
    with pytest.raises(StoreError, match="no results store"):
        Store.open(tmp_path / "missing", create=False)
    assert not (tmp_path / "missing").exists()


# -- runs and jobs ------------------------------------------------------------------------------------------


def test_create_run_records_config_and_versions(store):
    run = store.create_run({"seeds": 3}, device="NVIDIA H100", versions={"torch": "2.11.0"}, confined=True)
    assert run.config == {"seeds": 3}
    assert run.device == "NVIDIA H100"
    assert run.versions["torch"] == "2.11.0"
    assert run.versions["kernellab"]  # from the installed package metadata
    assert store.latest_run() == run
    assert store.runs() == [run]


def test_add_jobs_is_idempotent(store, run):
    first = store.add_jobs(run.id, SPECS)
    assert [j.status for j in first] == ["pending"] * 3
    claimed = store.set_job_status(first[0], "running")
    again = store.add_jobs(run.id, SPECS + [JobSpec("act/gelu", "claude")])
    assert [j.id for j in again[:3]] == [j.id for j in first]
    assert len(store.jobs(run.id)) == 4
    # re-adding does not reset a job that is already under way
    assert store.job(claimed).status == "running"
    assert again[2].kind is TaskKind.KERNEL_TO_KERNEL and again[2].category == "gemm"


def test_job_key_is_unique_per_run(store, run):
    other = store.create_run({}, confined=False)
    store.add_jobs(run.id, SPECS[:1])
    store.add_jobs(other.id, SPECS[:1])
    assert len(store.jobs()) == 2 and len(store.jobs(run.id)) == 1


def test_job_status_is_recorded_without_a_worker(store, run):
    """The store records where a job stands; choosing a job and naming its worker is the run
    layer's queue (tests/run/test_queue.py)."""
    job = store.add_jobs(run.id, SPECS[:1])[0]
    running = store.set_job_status(job, "running")
    assert running.status == "running" and running.tries == 1 and running.started and running.worker is None
    back = store.set_job_status(job, "pending")
    assert back.status == "pending" and back.started is None and back.tries == 1
    store.set_job_status(job, "running")
    failed = store.finish_job(job, "failed", error="agent crashed")
    assert failed.status == "failed" and failed.error == "agent crashed" and failed.finished and failed.tries == 2
    assert store.status_counts(run.id) == {"pending": 0, "running": 0, "done": 0, "failed": 1}
    with pytest.raises(ValueError, match="finishes"):
        store.finish_job(job, "running")
    with pytest.raises(ValueError, match="only a finished job"):
        store.set_job_status(job, "pending", error="why")
    with pytest.raises(ValueError, match="unknown job status"):
        store.set_job_status(job, "paused")


# -- attempts, verdicts, artifacts --------------------------------------------------------------------------


def test_record_attempt_with_verdict_and_artifact(store, run, verdict):
    job = store.add_jobs(run.id, SPECS[:1])[0]
    source = "import triton\n# kernel v1\n"
    v = verdict(speedup=2.0, holdout_speedup=1.5)
    a = store.record_attempt(job, source, v, usage=AttemptUsage(tokens_in=1000, tokens_out=200, cost_usd=0.05,
                                                                agent_steps=4, wall_s=12.5), note="first try")
    # the kernel is a content-addressed file beside the db
    sha = hashlib.sha256(source.encode()).hexdigest()
    assert a.proposal_sha256 == sha
    assert a.artifact.startswith("artifacts/") and a.artifact.endswith(f"{sha}.py")
    assert store.kernel_path(a).read_text() == source
    assert a.iteration == 1 and a.usage.tokens_in == 1000 and a.note == "first try"
    # the full verdict round-trips, and the extracted columns agree with it
    assert a.verdict.to_dict() == json.loads(v.to_json())
    row = raw(store).execute("SELECT status, compiled, correct, failed_stage, holdout_correct, speedup_vs_eager, "
                             "speedup_vs_compile, speedup_vs_baseline, holdout_speedup_vs_eager, elapsed_s "
                             "FROM verdicts WHERE attempt_id = ?", (a.id,)).fetchone()
    assert row == ("passed", 1, 1, None, 1, 2.0, 1.0, None, 1.5, 3.25)
    # three seen timings and one holdout timing, one row each
    timings = store.timings(a.verdict_id)
    assert [(t["config"], t["phase"], t["holdout"]) for t in timings] == [
        ("M=4096", "forward", 0), ("M=8192", "forward", 0), ("M=4096", "forward+backward", 0), ("M=37", "forward", 1)]
    assert timings[0]["eager_us"] == pytest.approx(20.0) and timings[0]["peak_mem_bytes"] == 4096


def test_iterations_and_identical_proposals(store, run, verdict):
    job = store.add_jobs(run.id, SPECS[:1])[0]
    a1 = store.record_attempt(job, "same", verdict(correct=False))
    a2 = store.record_attempt(job, "same", verdict())
    a3 = store.record_attempt(job, None, None, iteration=7)
    assert (a1.iteration, a2.iteration, a3.iteration) == (1, 2, 7)
    assert a1.artifact == a2.artifact  # one file for one content
    assert len(list(store.kernel_path(a1).parent.iterdir())) == 1
    assert a3.artifact is None and a3.verdict is None
    assert [a.id for a in store.attempts(job)] == [a1.id, a2.id, a3.id]
    assert [a.id for a in store.attempts(run_id=run.id)] == [a1.id, a2.id, a3.id]
    assert a1.verdict.failed_stage == "shape_sweep"


def test_attempt_flags(store, run, verdict):
    job = store.add_jobs(run.id, SPECS[:1])[0]
    a = store.record_attempt(job, "k", verdict(), kept=True)
    assert a.kept and not a.final
    b = store.set_attempt_flags(a, kept=False, final=True)
    assert not b.kept and b.final


def test_verdict_dict_with_nan_is_stored_as_strict_json(store, run, verdict):
    job = store.add_jobs(run.id, SPECS[:1])[0]
    vd = verdict().to_dict()
    vd["speedup"]["vs_eager"] = float("nan")
    a = store.record_attempt(job, "k", vd)
    text = raw(store).execute("SELECT verdict FROM verdicts WHERE id = ?", (a.verdict_id,)).fetchone()[0]
    assert json.loads(text)["speedup"]["vs_eager"] is None
    with pytest.raises(TypeError):
        store.record_attempt(job, "k", {"no": "status"})


def test_save_artifact_log(store, run):
    job = store.add_jobs(run.id, SPECS[2:])[0]
    rel = store.save_artifact(job, "agent log\n", ".log")
    assert (store.run_dir / rel).read_text() == "agent log\n"
    assert "gemm_int8-codex-s0-keep-revert" in rel
    with pytest.raises(ValueError):
        store.save_artifact(job, "x", "/../../etc")


def test_events(store, run):
    job = store.add_jobs(run.id, SPECS[:1])[0]
    store.record_event(job, "proposal", {"iteration": 1, "score": float("inf")})
    store.record_event(job.id, "revert")
    events = store.events(job)
    assert [e.kind for e in events] == ["proposal", "revert"]
    assert events[0].payload == {"iteration": 1, "score": None}
    assert events[0].created <= events[1].created
    store.record_event(job, "proposal", {"iteration": 2})
    assert [e.payload.get("iteration") for e in store.events(job, "proposal")] == [1, 2]
    assert store.events(job, "keep") == []


def test_a_failed_transaction_leaves_nothing(store, run):
    job = store.add_jobs(run.id, SPECS[:1])[0]
    with pytest.raises(RuntimeError), store.transaction():
        store.record_event(job, "half")  # joins the outer transaction
        raise RuntimeError("crash before commit")
    assert store.events(job) == []
    assert raw(store).execute("SELECT count(*) FROM events").fetchone()[0] == 0


def test_foreign_keys_are_enforced(store):
    with pytest.raises(sqlite3.IntegrityError):
        store.record_event(12345, "orphan")
    with pytest.raises(StoreError):
        store.record_attempt(12345, "k")
