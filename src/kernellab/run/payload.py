"""What travels between a campaign's driver and a worker on another machine: files as bytes.

A worker of the Ray backend sees no path of the driver's. It gets a ``JobPayload``: the job's
identity and options, its task's files (a tar archive, shared by every job of the task), the files
that agent options name on the driver (``replay:kernels=DIR``: the folder, packed once), and, for
a job that was interrupted before, its unfinished solve folder to continue. It gives back a
``JobReturn``: the whole solve folder as a tar archive (the solve's own store with attempts,
verdicts and events, its trajectory, ``result.json``), which the driver unpacks into
``RUN_DIR/jobs/<job>/`` and copies into the campaign's store exactly as the local backend's workers
do (``job.record_solve``). Only the driver writes the campaign's store and artifacts.

Archives are built and read with ``tarfile``; unpacking uses its ``data`` filter, so an archive
cannot write outside its destination.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import shutil
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernellab.tasks.load import load_task
from kernellab.tasks.model import Task

SKIPPED = ("__pycache__",)  # never packed: caches a node rebuilds itself


@dataclass(frozen=True)
class Bundle:
    """Files of the driver, packed: ``name`` is the top-level entry (a file or a folder) inside
    ``data``; ``sha256`` names the content, so a node unpacks one bundle once."""

    name: str
    data: bytes
    sha256: str

    def unpack(self, cache: Path) -> Path:
        """Unpack into ``cache/<sha256>/`` (once) and return the path of the top-level entry."""
        target = cache / self.sha256
        if not target.exists():
            staging = cache / f".{self.sha256}.{os.getpid()}.tmp"
            shutil.rmtree(staging, ignore_errors=True)
            unpack_bytes(self.data, staging)
            try:
                staging.rename(target)
            except OSError:  # another process of this node unpacked it first
                shutil.rmtree(staging, ignore_errors=True)
        return target / self.name


@dataclass(frozen=True)
class TaskBundle:
    """A task's files and the id it has on the driver (a suite id such as ``elementwise/relu``, which
    a folder unpacked elsewhere would not get from its own name)."""

    task_id: str
    files: Any  # a Bundle, or (on Ray) a reference to one in the object store

    @classmethod
    def of(cls, task_ref: str) -> TaskBundle:
        task = load_task(task_ref)
        path = Path(task_ref) if Path(task_ref).is_file() else task.root
        return cls(task.id, pack_path(path))


@dataclass(frozen=True)
class JobPayload:
    """One job for a remote worker. ``spec``, ``task`` and the values of ``shipped`` may be object
    references, shared by many jobs (the worker's ``resolve`` fetches them)."""

    job_id: int
    dir_name: str  # the job's folder name under RUN_DIR/jobs, and on the worker
    agent: str
    seed: int
    spec: Any  # the CampaignSpec
    task: Any  # TaskBundle
    shipped: Mapping[str, Any]  # agent option -> Bundle of the file or folder it names on the driver
    interpret: bool
    previous: bytes | None = None  # an unfinished solve folder to continue (tar)
    attempt: int = 1  # the job's try (jobs.tries)


@dataclass(frozen=True)
class JobReturn:
    """What a remote worker gives back for one job."""

    job_id: int
    status: str  # a solve status, "error" (the solve raised) or "interrupted"
    error: str | None
    solve: bytes | None  # the solve folder (tar); None when nothing was written
    node: str
    gpu: int | None
    wall_s: float
    extra: dict[str, Any] = field(default_factory=dict)


def pack_path(path: Path) -> Bundle:
    """A file or folder as a ``Bundle`` (folders recursively, without caches)."""
    path = path.expanduser().resolve()
    data = pack_bytes(path, arcname=path.name)
    return Bundle(path.name, data, hashlib.sha256(data).hexdigest())


def pack_bytes(path: Path, arcname: str = ".") -> bytes:
    """``path`` (a folder's contents under ``arcname``, or one file) as a gzipped tar, with fixed
    times and owners so the same files give the same bytes."""

    def clean(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if any(part in SKIPPED for part in Path(info.name).parts):
            return None
        info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
        return info

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6) as tar:
        if path.is_dir():
            tar.add(path, arcname=arcname, filter=clean, recursive=False)
            for child in sorted(path.rglob("*")):
                if not child.is_symlink() or child.exists():
                    tar.add(child, arcname=str(Path(arcname) / child.relative_to(path)), filter=clean,
                            recursive=False)
        else:
            tar.add(path, arcname=arcname, filter=clean)
    return buffer.getvalue()


def unpack_bytes(data: bytes, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(dest, filter="data")


def shipped_options(agent_cls: type, options: Mapping[str, str]) -> tuple[dict[str, str], dict[str, Bundle]]:
    """Split an agent's options into those passed as they are and those naming files of the driver
    (the agent class's ``path_options``, such as replay's ``kernels``), packed."""
    kept, shipped = {}, {}
    names = set(getattr(agent_cls, "path_options", ()))
    for key, value in options.items():
        if key in names and value and Path(value).expanduser().exists():
            shipped[key] = pack_path(Path(value))
        else:
            kept[key] = value
    return kept, shipped


def materialize_task(bundle: TaskBundle, cache: Path) -> Task:
    """The task unpacked on this node, with the id it has on the driver."""
    files = bundle.files
    task = load_task(files.unpack(cache))
    return dataclasses.replace(task, id=bundle.task_id) if task.id != bundle.task_id else task
