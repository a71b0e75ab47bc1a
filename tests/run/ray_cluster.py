"""A Ray cluster of several nodes on this machine: one ``ray start --block`` process per node, each in
its own session (so a node, its raylet and its workers, can be killed at once), its own temporary
folder and its own working folder, none of them the campaign's run folder."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

SRC = Path(__file__).parents[2] / "src"


def cluster_env() -> dict[str, str]:
    """What every node, and the driver, run with: this tree's kernellab, no GPU, no token (loopback
    only), no usage report."""
    path = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "CUDA_VISIBLE_DEVICES": "", "RAY_AUTH_MODE": "disabled",
            "RAY_USAGE_STATS_ENABLED": "0"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Node:
    name: str
    proc: subprocess.Popen
    temp_dir: Path
    cwd: Path
    log: Path

    def node_id(self) -> str | None:
        """The node's Ray id (hex), from a file its raylet names after it."""
        for p in (self.temp_dir / "session_latest").glob("metrics_export_port_*"):
            return p.name.rsplit("_", 1)[1]
        return None

    def kill(self) -> None:
        """SIGKILL to everything of the node at once: its session (the ``ray start`` process, the
        raylet), its Ray workers (their command lines name the node's temporary folder; Ray starts
        them in sessions of their own) and every process under those (a worker's solve)."""
        doomed = _descendants({self.proc.pid} | _processes_naming(str(self.temp_dir)))
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        for pid in doomed:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(timeout=30)


def _processes_naming(text: str) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.add(int(entry.name))
            except OSError:
                pass
    return found


def _descendants(roots: set[int]) -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    out, grew = set(roots), True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in out and pid not in out}
        out |= more
        grew = bool(more)
    return out


@dataclass
class LocalCluster:
    root: Path
    port: int = field(default_factory=free_port)
    nodes: list[Node] = field(default_factory=list)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start_node(self, name: str, cpus: int, *, head: bool = False, timeout_s: float = 120.0) -> Node:
        temp, cwd = self.root / f"{name}-tmp", self.root / f"{name}-cwd"
        temp.mkdir(parents=True)
        cwd.mkdir(parents=True)
        log = self.root / f"{name}.log"
        ray = [sys.executable, "-c", "import sys; from ray.scripts.scripts import main; sys.exit(main())",
               "start", "--block", "--num-cpus", str(cpus), "--num-gpus", "0", "--temp-dir", str(temp),
               "--node-ip-address", "127.0.0.1", "--disable-usage-stats"]
        ray += ["--head", "--port", str(self.port), "--include-dashboard", "false"] if head else \
            ["--address", self.address]
        with open(log, "wb") as out:
            proc = subprocess.Popen(ray, cwd=cwd, env=cluster_env(), stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        node = Node(name, proc, temp, cwd, log)
        self.nodes.append(node)
        deadline = time.monotonic() + timeout_s
        while node.node_id() is None or b"Ray runtime started" not in log.read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ray node {name} did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        return node

    def stop(self) -> None:
        for node in reversed(self.nodes):
            if node.proc.poll() is None:
                node.kill()
        shutil.rmtree(self.root, ignore_errors=True)


def start_cluster(cpus: tuple[int, ...]) -> LocalCluster:
    """Nodes with these CPU counts (the first is the head), under a short temporary folder (Ray's
    socket paths must stay under 107 characters)."""
    cluster = LocalCluster(Path(tempfile.mkdtemp(prefix="klray-", dir="/tmp")))
    try:
        for i, n in enumerate(cpus):
            cluster.start_node("head" if i == 0 else f"node{i}", n, head=i == 0)
    except BaseException:
        cluster.stop()
        raise
    return cluster
