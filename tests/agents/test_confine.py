"""Confinement with bubblewrap: real bwrap processes, real files, a real check socket."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import kernellab
from kernellab.agents.check_service import CheckService
from kernellab.agents.confine import (
    ConfineError,
    confine,
    kernellab_paths,
    probe_confinement,
)
from kernellab.agents.workspace import build_workspace
from kernellab.tasks.load import SUITE_ROOT, load_task

ROOT = Path(__file__).parents[2]
TASK = ROOT / "tests" / "adversarial" / "tasks" / "vector_add"
GOOD = (ROOT / "tests" / "adversarial" / "candidates" / "vector_add" / "masked_add.py").read_text()
PROBE = probe_confinement()
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}

confined_only = pytest.mark.skipif(not PROBE.available, reason=f"no confinement here: {PROBE.detail}")


def run(command: list[str], workspace: Path, *, network: bool = False, env: dict | None = None,
        **kw) -> subprocess.CompletedProcess:
    wrapped = confine(command, workspace, network=network, env=env or ENV, **kw)
    assert wrapped.confined, wrapped.reason
    return subprocess.run(wrapped.argv, env=wrapped.env, cwd=wrapped.cwd, capture_output=True, text=True,
                          timeout=120, check=False)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "kernel.py").write_text("# kernel\n")
    return ws


@confined_only
def test_files_outside_the_workspace_cannot_be_read(workspace):
    package_init = Path(kernellab.__file__).resolve()
    for secret in (SUITE_ROOT / "normalization" / "rmsnorm" / "task.toml", package_init, TASK / "task.toml"):
        assert secret.is_file()
        done = run(["cat", str(secret)], workspace)
        assert done.returncode != 0 and "No such file" in done.stderr, secret
    assert run(["cat", "kernel.py"], workspace).stdout == "# kernel\n"


@confined_only
def test_the_kernellab_installation_stays_masked_under_a_bound_folder(workspace, tmp_path):
    """Binding a folder that holds kernellab (a user's home, a site-packages) still hides kernellab."""
    package_init = Path(kernellab.__file__).resolve()
    holder = package_init.parents[3]
    done = run(["cat", str(package_init)], workspace, extra_ro=[holder])
    assert done.returncode != 0
    shown = tmp_path / "shown"
    (shown / "secret").mkdir(parents=True)
    (shown / "public.txt").write_text("public\n")
    (shown / "secret" / "holdout.toml").write_text("holdout = []\n")
    done = run(["cat", str(shown / "public.txt"), str(shown / "secret" / "holdout.toml")], workspace,
               extra_ro=[shown], hide=[shown / "secret"])
    assert done.stdout == "public\n" and "holdout.toml" in done.stderr
    inside = kernellab_paths()[0]
    with pytest.raises(ConfineError, match="which agents must not see"):
        confine(["true"], workspace, network=False, env=ENV, extra_ro=[inside])


@confined_only
def test_the_workspace_is_writable_and_the_rest_is_not(workspace):
    script = ("echo new > made.txt && echo tmp > /tmp/private.txt && cat /tmp/private.txt; "
              "touch /usr/evil 2>/dev/null || echo usr-read-only")
    done = run(["sh", "-c", script], workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["tmp", "usr-read-only"]
    assert (workspace / "made.txt").read_text() == "new\n"
    assert not Path("/tmp/private.txt").exists()  # /tmp inside is private


@confined_only
def test_kernellab_cannot_be_imported_inside(workspace):
    done = run(["python3", "-c", "import kernellab"], workspace)
    assert done.returncode != 0 and "No module named 'kernellab'" in done.stderr
    # This very interpreter and its site-packages (torch, numpy) bound read-only: still no kernellab.
    prefixes = [Path(sys.prefix), Path(sys.base_prefix)]
    try:
        wrapped = confine([sys.executable, "-c", "import numpy; import kernellab"], workspace, network=False,
                          env=ENV, extra_ro=prefixes)
    except ConfineError as exc:  # the interpreter lives inside the source checkout (a .venv in it)
        pytest.skip(str(exc))
    done = subprocess.run(wrapped.argv, env=wrapped.env, capture_output=True, text=True, timeout=120, check=False)
    assert "No module named 'kernellab'" in done.stderr, done.stderr


@confined_only
def test_the_environment_is_exactly_what_is_passed(workspace, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret")
    done = run(["env"], workspace, env={**ENV, "MODEL": "m1"})
    seen = dict(line.split("=", 1) for line in done.stdout.splitlines())
    assert seen.pop("PWD") == str(workspace.resolve())  # bwrap's --chdir sets it
    assert seen == {**ENV, "MODEL": "m1"}


@confined_only
def test_no_network_unless_asked_and_no_view_of_other_processes(workspace):
    def interfaces(network: bool) -> list[str]:
        done = run(["cat", "/proc/net/dev"], workspace, network=network)
        return sorted(line.split(":")[0].strip() for line in done.stdout.splitlines()[2:])

    assert interfaces(False) == ["lo"]
    host = sorted(line.split(":")[0].strip() for line in Path("/proc/net/dev").read_text().splitlines()[2:])
    assert interfaces(True) == host
    done = run(["sh", "-c", "ls /proc | grep -c '^[0-9]'"], workspace)
    assert int(done.stdout) < 5  # its own pid namespace: the orchestrator is not there


@confined_only
def test_killing_the_confinement_kills_everything_inside(workspace):
    marker = "31415926"
    wrapped = confine(["sh", "-c", f"sleep {marker} & sleep {marker}"], workspace, network=False, env=ENV)
    proc = subprocess.Popen(wrapped.argv, env=wrapped.env, start_new_session=True)
    deadline = time.monotonic() + 10
    while not _sleepers(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(_sleepers(marker)) == 2
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while _sleepers(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _sleepers(marker) == []


def _sleepers(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", marker.encode()]:
                found.append(int(entry.name))
        except OSError:
            pass
    return found


@confined_only
def test_the_check_socket_is_reachable_from_inside(tmp_path):
    """The service's socket outside the workspace: its folder is bound, its path passed in the environment."""
    task = load_task(TASK)
    ws = build_workspace(task, tmp_path / "ws", GOOD)
    socket_dir = tmp_path / "sockets"
    with CheckService(task, ws, tmp_path / "logs", socket_path=socket_dir / "check.sock") as service:
        assert service.bind_paths == [socket_dir.resolve()]
        done = run(["python3", "./check"], ws.path, env={**ENV, **service.env}, extra_ro=service.bind_paths)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("check vector_add: PASSED")


@confined_only
def test_an_agent_cli_installed_outside_the_system_is_bound_with_its_package(workspace, tmp_path):
    """An npm-style install: prefix/bin/mycli links to prefix/lib/node_modules/@acme/mycli/cli.py,
    a script whose interpreter is found on PATH; the package's data file must be readable."""
    package = tmp_path / "prefix" / "lib" / "node_modules" / "@acme" / "mycli"
    package.mkdir(parents=True)
    (package / "data.txt").write_text("model endpoint ok\n")
    cli = package / "cli.py"
    cli.write_text("#!/usr/bin/env python3\nimport pathlib\n"
                   "print(pathlib.Path(__file__).resolve().with_name('data.txt').read_text(), end='')\n")
    cli.chmod(0o755)
    (tmp_path / "prefix" / "bin").mkdir()
    (tmp_path / "prefix" / "bin" / "mycli").symlink_to("../lib/node_modules/@acme/mycli/cli.py")
    (tmp_path / "prefix" / "lib" / "other.txt").write_text("not part of the package\n")
    env = {**ENV, "PATH": f"{tmp_path / 'prefix' / 'bin'}:{ENV['PATH']}"}
    wrapped = confine(["mycli"], workspace, network=False, env=env)
    assert set(wrapped.bound) == {tmp_path / "prefix" / "bin" / "mycli", package}
    done = subprocess.run(wrapped.argv, env=wrapped.env, capture_output=True, text=True, timeout=60, check=False)
    assert done.stdout == "model endpoint ok\n", done.stderr
    assert run(["cat", str(tmp_path / "prefix" / "lib" / "other.txt")], workspace, env=env).returncode != 0


def test_without_bwrap_the_run_is_marked_unconfined(workspace):
    missing = probe_confinement("/nonexistent/bwrap")
    assert not missing.available and "not found" in missing.detail
    wrapped = confine(["python3", "-V"], workspace, network=True, env=ENV, probe=missing)
    assert not wrapped.confined and wrapped.argv == ["python3", "-V"] and wrapped.env == ENV
    assert wrapped.to_dict() == {"confined": False, "reason": missing.detail, "network": True, "tool": None}


def test_bad_confinement_requests_are_one_line_errors(workspace, tmp_path):
    with pytest.raises(ConfineError, match="non-empty list"):
        confine([], workspace, network=False, env=ENV)
    with pytest.raises(ConfineError, match="is not a folder"):
        confine(["true"], tmp_path / "nowhere", network=False, env=ENV)
    with pytest.raises(ConfineError, match="must map a string to a string"):
        confine(["true"], workspace, network=False, env={"N": 1})
    if PROBE.available:
        with pytest.raises(ConfineError, match="does not exist"):
            confine(["true"], workspace, network=False, env=ENV, extra_ro=[tmp_path / "missing"])


def test_kernellab_paths_cover_the_package_and_its_suite():
    paths = kernellab_paths()
    package = Path(kernellab.__file__).resolve().parent
    assert any(p == package or p in package.parents for p in paths)
    assert any(p == SUITE_ROOT.resolve() or p in SUITE_ROOT.resolve().parents for p in paths)
