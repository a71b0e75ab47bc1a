"""Files beside the results database: kernels and logs, content-addressed under ``RUN_DIR/artifacts``.

A file is written (atomically: temporary name, then rename) *before* the database row that names it
is committed, so a process killed in between leaves at worst an unreferenced file, never a row that
points at nothing. Content addressing makes a repeated proposal cost no extra space and makes the
write idempotent.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

ARTIFACTS_DIR = "artifacts"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def sha256_of(content: bytes | str) -> str:
    data = content.encode() if isinstance(content, str) else content
    return hashlib.sha256(data).hexdigest()


def slug(text: str, limit: int = 40) -> str:
    """A file-name-safe rendering of ``text`` (``norm/rmsnorm`` → ``norm_rmsnorm``)."""
    return _UNSAFE.sub("_", text).strip("_.")[:limit] or "x"


def job_dir_name(job_id: int, task_id: str, agent: str, seed: int, strategy: str) -> str:
    return f"{job_id:06d}-{slug(task_id)}-{slug(agent)}-s{seed}-{slug(strategy)}"


def write_artifact(run_dir: Path, job_dir: str, content: bytes | str, suffix: str) -> tuple[str, str]:
    """Store ``content`` as ``artifacts/<job_dir>/<sha256><suffix>``; return (sha256, path relative to run_dir)."""
    if suffix and not re.fullmatch(r"\.[A-Za-z0-9_.-]{1,16}", suffix):
        raise ValueError(f"bad artifact suffix {suffix!r}")
    data = content.encode() if isinstance(content, str) else content
    digest = sha256_of(data)
    relative = Path(ARTIFACTS_DIR) / job_dir / f"{digest}{suffix}"
    target = run_dir / relative
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return digest, relative.as_posix()
