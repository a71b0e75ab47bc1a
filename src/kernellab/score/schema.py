"""The results store's schema, as an ordered list of migrations.

``MIGRATIONS[i]`` takes a database from schema version ``i`` to ``i + 1``; version 0 is an empty file.
Append a migration to change the schema, never edit one that has shipped: a run directory written by
an older kernellab is upgraded in place when opened, and one written by a newer kernellab is refused.
docs/scoring.md ("Results store") documents every table and column; keep it in step.
"""

from __future__ import annotations

# The CHECK constraints below spell these out literally: a shipped migration must not change when a
# constant does.
JOB_STATUSES = ("pending", "running", "done", "failed")
TASK_KINDS = ("torch->kernel", "kernel->kernel")

_V1 = (
    """CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        created TEXT NOT NULL,
        config TEXT NOT NULL DEFAULT '{}',
        device TEXT,
        kernellab_version TEXT,
        torch_version TEXT,
        triton_version TEXT,
        confined INTEGER NOT NULL CHECK (confined IN (0, 1))
    )""",
    """CREATE TABLE jobs (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        task_id TEXT NOT NULL,
        agent TEXT NOT NULL,
        seed INTEGER NOT NULL,
        strategy TEXT NOT NULL,
        category TEXT NOT NULL DEFAULT 'uncategorized',
        kind TEXT NOT NULL DEFAULT 'torch->kernel' CHECK (kind IN ('torch->kernel', 'kernel->kernel')),
        status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'done', 'failed')),
        worker TEXT,
        gpu TEXT,
        worker_host TEXT,
        worker_pid INTEGER,
        worker_started TEXT,
        tries INTEGER NOT NULL DEFAULT 0,
        started TEXT,
        finished TEXT,
        heartbeat TEXT,
        error TEXT,
        UNIQUE (run_id, task_id, agent, seed, strategy)
    )""",
    "CREATE INDEX jobs_by_status ON jobs (run_id, status, id)",
    """CREATE TABLE attempts (
        id INTEGER PRIMARY KEY,
        job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
        iteration INTEGER NOT NULL,
        proposal_sha256 TEXT,
        artifact TEXT,
        tokens_in INTEGER,
        tokens_out INTEGER,
        cost_usd REAL,
        agent_steps INTEGER,
        wall_s REAL,
        created TEXT NOT NULL,
        kept INTEGER NOT NULL DEFAULT 0 CHECK (kept IN (0, 1)),
        final INTEGER NOT NULL DEFAULT 0 CHECK (final IN (0, 1)),
        note TEXT
    )""",
    "CREATE INDEX attempts_by_job ON attempts (job_id, iteration)",
    """CREATE TABLE verdicts (
        id INTEGER PRIMARY KEY,
        attempt_id INTEGER NOT NULL UNIQUE REFERENCES attempts(id) ON DELETE CASCADE,
        verdict TEXT NOT NULL,
        status TEXT NOT NULL,
        compiled INTEGER NOT NULL CHECK (compiled IN (0, 1)),
        correct INTEGER NOT NULL CHECK (correct IN (0, 1)),
        failed_stage TEXT,
        holdout_correct INTEGER CHECK (holdout_correct IN (0, 1)),
        speedup_vs_eager REAL,
        speedup_vs_compile REAL,
        speedup_vs_baseline REAL,
        holdout_speedup_vs_eager REAL,
        elapsed_s REAL
    )""",
    """CREATE TABLE timings (
        id INTEGER PRIMARY KEY,
        verdict_id INTEGER NOT NULL REFERENCES verdicts(id) ON DELETE CASCADE,
        holdout INTEGER NOT NULL CHECK (holdout IN (0, 1)),
        config TEXT NOT NULL,
        dtype TEXT NOT NULL,
        phase TEXT NOT NULL,
        method TEXT,
        candidate_us REAL,
        eager_us REAL,
        compile_us REAL,
        baseline_us REAL,
        speedup_vs_eager REAL,
        speedup_vs_compile REAL,
        speedup_vs_baseline REAL,
        pct_of_roofline REAL,
        peak_mem_bytes INTEGER
    )""",
    "CREATE INDEX timings_by_verdict ON timings (verdict_id)",
    """CREATE TABLE events (
        id INTEGER PRIMARY KEY,
        job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
        created TEXT NOT NULL,
        kind TEXT NOT NULL,
        payload TEXT NOT NULL DEFAULT '{}'
    )""",
    "CREATE INDEX events_by_job ON events (job_id, id)",
)

MIGRATIONS: tuple[tuple[str, ...], ...] = (_V1,)
SCHEMA_VERSION = len(MIGRATIONS)
