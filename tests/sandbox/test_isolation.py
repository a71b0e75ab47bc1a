"""Fault isolation in the sandbox: real fork server, real child processes, real crashes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from kernellab.sandbox.candidate import CandidateError, CandidateProcess, ChildFailure, ChildSpec
from kernellab.sandbox.channel import ProtocolError, dumps, loads
from kernellab.sandbox.forkserver import ForkServer

GOOD = textwrap.dedent("""
    import torch
    import torch.nn as nn

    class ModelNew(nn.Module):
        def forward(self, x):
            print("noise on stdout", flush=True)
            os.write(1, bytes(range(256)))
            return x + 1
    import os
""")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    work = tmp_path_factory.mktemp("forkserver")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work), "TRITON_INTERPRET": "1",
           "SECRET_API_KEY": "must-not-leak"}
    env.pop("SECRET_API_KEY")  # the session passes a scrubbed environment; so does this fixture
    srv = ForkServer(env, work / "forkserver.log")
    yield srv
    srv.close()


def spawn(server, tmp_path: Path, name: str) -> CandidateProcess:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    return CandidateProcess(server, ChildSpec("cpu", True, env, tmp_path / f"{name}.log"))


def write(tmp_path: Path, name: str, source: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return str(path)


def test_garbage_on_stdout_cannot_reach_the_channel(server, tmp_path):
    child = spawn(server, tmp_path, "good")
    child.request("import", 30, path=write(tmp_path, "good", GOOD))
    child.request("instantiate", 30, key="k", init_inputs=[], seed=0, state={}, dtype="float32", keep_dtype=[])
    x = torch.randn(5)
    value = child.request("run", 30, key="k", calls=[{"inputs": [x]}], poison_bytes=[], profile=False)
    assert torch.equal(value["results"][0]["outputs"][0], x + 1)
    assert "noise on stdout" in (tmp_path / "good.log").read_text(errors="replace")
    child.close()


@pytest.mark.parametrize("name, source, reason, words", [
    ("segfault", "import faulthandler\nfaulthandler._sigsegv()\n", "died", "SIGSEGV"),
    ("exit0", "import os\nos._exit(0)\n", "died", "exited early with status 0"),
    ("abort", "import os\nos.abort()\n", "died", "SIGABRT"),
    ("hang", "while True:\n    pass\n", "timeout", "no answer within"),
])
def test_dying_children_give_a_reason(server, tmp_path, name, source, reason, words):
    child = spawn(server, tmp_path, name)
    with pytest.raises(ChildFailure) as failure:
        child.request("import", 3, path=write(tmp_path, name, source))
    assert failure.value.reason == reason
    assert words in str(failure.value)
    child.close()


def test_python_errors_keep_the_child_alive(server, tmp_path):
    child = spawn(server, tmp_path, "raises")
    with pytest.raises(CandidateError, match="ZeroDivisionError"):
        child.request("import", 10, path=write(tmp_path, "raises", "x = 1 / 0\n"))
    child.request("import", 10, path=write(tmp_path, "ok", GOOD))  # still answers
    child.close()


def test_the_child_lets_go_of_the_judges_memory_when_asked_and_goes_on(server, tmp_path):
    child = spawn(server, tmp_path, "release")
    child.request("import", 10, path=write(tmp_path, "release", GOOD))
    assert child.request("release", 10) == {}
    child.request("import", 10, path=write(tmp_path, "release_again", GOOD))  # still answers
    assert child.op_stats["release"][0] == 1
    child.close()


def test_forked_grandchildren_die_with_the_child(server, tmp_path):
    source = """
        import os, time
        pid = os.fork()
        if pid == 0:
            time.sleep(600)
            os._exit(0)
        os.write(2, ("grandchild=%d\\n" % pid).encode())  # to the child's log (writing a file ends it)
        while True:
            pass
    """
    child = spawn(server, tmp_path, "forker")
    with pytest.raises(ChildFailure):
        child.request("import", 3, path=write(tmp_path, "forker", source))
    grandchild = int((tmp_path / "forker.log").read_text().split("grandchild=")[1].split()[0])
    for _ in range(50):
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the forked grandchild survived the kill of its process group")


def test_environment_is_scrubbed(server, tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret")
    child = spawn(server, tmp_path, "env")
    source = """
        import os, torch, torch.nn as nn
        class ModelNew(nn.Module):
            def forward(self, x):
                return x + (1.0 if "ANTHROPIC_API_KEY" in os.environ else 0.0)
    """
    child.request("import", 10, path=write(tmp_path, "env", source))
    child.request("instantiate", 30, key="k", init_inputs=[], seed=0, state={}, dtype="float32", keep_dtype=[])
    x = torch.zeros(3)
    out = child.request("run", 30, key="k", calls=[{"inputs": [x]}], poison_bytes=[], profile=False)
    assert torch.equal(out["results"][0]["outputs"][0], x)
    child.close()


def test_twenty_children_in_one_server_after_crashes(server, tmp_path):
    sources = {"segv": "import faulthandler\nfaulthandler._sigsegv()\n", "exit": "import os\nos._exit(0)\n"}
    verdicts = []
    for i in range(12):
        child = spawn(server, tmp_path, f"c{i}")
        kind = ["segv", "exit", "good"][i % 3]
        try:
            child.request("import", 10, path=write(tmp_path, f"c{i}", sources.get(kind, GOOD)))
            verdicts.append("ok")
        except ChildFailure:
            verdicts.append("failed")
        child.close()
    assert verdicts.count("ok") == 4 and verdicts.count("failed") == 8
    assert server.alive()


def test_unpickler_refuses_code():
    import pickle

    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    with pytest.raises(ProtocolError, match="forbidden"):
        loads(pickle.dumps(Evil()))
    tensor = torch.randn(3, 4).to(torch.bfloat16)
    assert torch.equal(loads(dumps({"t": tensor}))["t"], tensor)


def test_a_grandchild_that_leaves_the_process_group_is_killed_too(server, tmp_path):
    source = """
        import os, time
        if os.fork() == 0:
            os.setsid()  # out of the candidate's process group: killpg cannot reach it
            if os.fork() == 0:
                os.write(2, ("pid=%d\\n" % os.getpid()).encode())  # to the child's log
                time.sleep(600)
            os._exit(0)
        while True:
            pass
    """
    child = spawn(server, tmp_path, "escaper")
    with pytest.raises(ChildFailure):
        child.request("import", 3, path=write(tmp_path, "escaper", source))
    escaped = _logged_pid(tmp_path / "escaper.log")
    for _ in range(60):
        try:
            os.kill(escaped, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    pytest.fail("a descendant that left the process group outlived its candidate")


def _logged_pid(log: Path) -> int:
    """The pid a candidate wrote to its log (a candidate that writes a file ends there)."""
    return int(log.read_text().split("pid=")[1].split()[0])


def _gone(pid: int, seconds: float = 6.0) -> bool:
    for _ in range(int(seconds * 10)):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def test_a_process_left_running_after_a_call_ends_the_evaluation(server, tmp_path):
    """A process the candidate starts and leaves running would run beside the judge's timing of
    the baselines: the judge sees it after the answer, whatever started it, and kills it."""
    source = """
        import os, sys
        pid = os.posix_spawn(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)"], {})
        os.write(2, ("pid=%d\\n" % pid).encode())
    """
    child = spawn(server, tmp_path, "spawner")
    with pytest.raises(ChildFailure, match=r"left 1 process\(es\).*running after its call") as info:
        child.request("import", 10, path=write(tmp_path, "spawner", source))
    assert info.value.violation == "process_escape"
    assert _gone(_logged_pid(tmp_path / "spawner.log")), "the spawned process outlived the verdict"


def test_a_daemon_that_left_the_session_is_still_seen(server, tmp_path):
    """Double fork and setsid: the daemon's parent exits, and the child (a subreaper) adopts it."""
    source = """
        import os, time
        ready, tell = os.pipe()
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.write(2, ("pid=%d\\n" % os.getpid()).encode())
                os.write(tell, b"x")
                time.sleep(600)
            os._exit(0)
        os.read(ready, 1)
        os.wait()  # its parent has gone: only the daemon is left
    """
    child = spawn(server, tmp_path, "daemon")
    with pytest.raises(ChildFailure, match="running after its call") as info:
        child.request("import", 10, path=write(tmp_path, "daemon", source))
    assert info.value.violation == "process_escape"
    assert _gone(_logged_pid(tmp_path / "daemon.log"))


def test_a_process_that_ends_within_the_call_is_fine(server, tmp_path):
    """Compilers run tools (ptxas) as processes and wait for them: that is no escape."""
    source = """
        import subprocess, sys
        import torch.nn as nn
        subprocess.run([sys.executable, "-c", "pass"], check=True)

        class ModelNew(nn.Module):
            def forward(self, x):
                subprocess.run([sys.executable, "-c", "pass"], check=True)
                return x + 1
    """
    child = spawn(server, tmp_path, "waits")
    child.request("import", 30, path=write(tmp_path, "waits", source))
    child.request("instantiate", 30, key="k", init_inputs=[], seed=0, state={}, dtype="float32", keep_dtype=[])
    out = child.request("run", 30, key="k", calls=[{"inputs": [torch.zeros(3)]}], poison_bytes=[], profile=False)
    assert torch.equal(out["results"][0]["outputs"][0], torch.ones(3))
    child.close()


def test_a_process_whose_leader_thread_exited_is_still_seen(server, tmp_path):
    """A process reads as a zombie once its first thread has exited (a raw exit system call) while
    its other threads run on: it has not ended."""
    helper = ("import ctypes, threading, time; threading.Thread(target=time.sleep, args=(600,)).start(); "
              "ctypes.CDLL(None).syscall(60, 0)")  # SYS_exit of the main thread alone (x86-64)
    source = f"""
        import os, sys, time
        pid = os.posix_spawn(sys.executable, [sys.executable, "-c", {helper!r}], {{}})
        os.write(2, ("pid=%d\\n" % pid).encode())
        time.sleep(1.0)  # the leader has exited by now; its other thread sleeps on
    """
    child = spawn(server, tmp_path, "leaderless")
    with pytest.raises(ChildFailure, match="running after its call") as info:
        child.request("import", 20, path=write(tmp_path, "leaderless", source))
    assert info.value.violation == "process_escape"
    assert _gone(_logged_pid(tmp_path / "leaderless.log"))


def test_the_candidate_process_is_stopped_while_the_judge_times_its_baselines(server, tmp_path):
    """Every thread of it, a native pool's too: none can load the GPU beside the baselines' timing."""
    child = spawn(server, tmp_path, "stopped")
    child.request("import", 10, path=write(tmp_path, "stopped", GOOD))

    def states() -> set[str]:
        found = set()
        for tid in os.listdir(f"/proc/{child.pid}/task"):
            with open(f"/proc/{child.pid}/task/{tid}/stat", "rb") as f:
                found.add(f.read().rpartition(b")")[2].split()[0].decode())
        return found

    with child.stopped():
        for _ in range(50):
            if states() <= {"T", "t"}:
                break
            time.sleep(0.02)
        assert states() <= {"T", "t"}
    child.request("import", 10, path=write(tmp_path, "again", GOOD))  # running again after the block
    assert not states() & {"T", "t"}
    child.close()



def test_the_candidates_process_writes_only_in_its_own_folder(server, tmp_path):
    """A file torch maps shared and writable in C++ raises no Python event: the kernel refuses the
    write (Landlock), outside the child's folder and the devices a GPU process needs, whoever asks,
    and the child holds no capability (a root judge's would hold them all). Inside it, writing works."""
    judge_file = tmp_path / "baselines.json"  # the judge's: beside the child's folder, not in it
    judge_file.write_text("honest")
    home = tmp_path / "home"
    home.mkdir()
    source = f"""
        import os, torch
        status = open("/proc/self/status").read()
        os.write(2, ("CapEff=" + status.split("CapEff:")[1].split()[0] + "\\n").encode())
        try:  # a device not among a GPU process's: a block device would be every file of its disk
            torch.ByteStorage.from_file("/dev/full", True, 1)
        except RuntimeError as exc:
            if "Permission denied" in str(exc):
                os.write(2, b"device refused\\n")
        for path in ({str(home / "mine.bin")!r}, {str(judge_file)!r}):
            torch.tensor([], dtype=torch.uint8).set_(torch.ByteStorage.from_file(path, True, 6)).fill_(120)
    """
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home)}
    child = CandidateProcess(server, ChildSpec("cpu", True, env, tmp_path / "mapper.log"))
    try:
        if child.unconfined:
            pytest.skip(child.unconfined)
        with pytest.raises(CandidateError, match="Permission denied"):
            child.request("import", 30, path=write(tmp_path, "mapper", source))
    finally:
        child.close()
    assert (home / "mine.bin").read_bytes() == b"x" * 6
    assert judge_file.read_text() == "honest"
    log = (tmp_path / "mapper.log").read_text()
    assert "CapEff=0000000000000000" in log and "device refused" in log, log  # no privileges either


def confined_lines(code: str) -> list[str]:
    """The lines ``code`` prints in a fresh interpreter; the test skips where it says it could not
    confine itself (``unconfined: <why>``)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    if out.stdout.startswith("unconfined:"):
        pytest.skip(out.stdout)
    return out.stdout.split("\n")


def test_confinement_leaves_a_process_its_own_proc_folder_only(tmp_path):
    """CUDA's start writes in the process's own ``/proc/<pid>`` (without it: error 304, "OS call
    failed"); another process's folder (its ``mem``, a judge's) stays refused."""
    code = textwrap.dedent(f"""
        import os, sys
        from kernellab.sandbox.confine import confine_writes
        why = confine_writes([{str(tmp_path)!r}])
        if why:
            print("unconfined:", why)
            sys.exit(0)
        os.close(os.open("/proc/self/comm", os.O_WRONLY))
        os.close(os.open(f"/proc/{{os.getpid()}}/task/{{os.getpid()}}/comm", os.O_WRONLY))
        try:
            os.open("/proc/{os.getpid()}/comm", os.O_WRONLY)
            print("judge's folder written")
        except PermissionError:
            print("judge's folder refused")
        try:  # the judge's environment (a campaign's API keys): Landlock's ptrace rule, not the write rule
            open("/proc/{os.getpid()}/environ", "rb").close()
            print("judge's environment read")
        except PermissionError:
            print("judge's environment refused")
    """)
    assert confined_lines(code)[:2] == ["judge's folder refused", "judge's environment refused"]


def test_confining_reads_refuses_only_the_process_memory(tmp_path):
    """The ruleset that keeps a process from reading its own ``mem`` leaves everything else as it was:
    reading elsewhere (``/proc/self/maps`` included), and moving a file into another folder, which
    every Landlock ruleset refuses (EXDEV) unless it handles and allows ``REFER`` there (Triton moves
    each compile into its cache folder)."""
    (tmp_path / "compile").mkdir()
    (tmp_path / "compile" / "kernel.so").write_bytes(b"x")
    code = textwrap.dedent(f"""
        import os, sys
        from kernellab.sandbox.confine import confine_reads
        why = confine_reads()
        if why:
            print("unconfined:", why)
            sys.exit(0)
        os.rename({str(tmp_path / "compile" / "kernel.so")!r}, {str(tmp_path / "kernel.so")!r})
        print("moved", open({str(tmp_path / "kernel.so")!r}, "rb").read() == b"x",
              len(open("/proc/self/maps").read()) > 0)
        try:
            open("/proc/self/mem", "rb").close()
            print("memory read")
        except PermissionError:
            print("memory refused")
    """)
    assert confined_lines(code)[:2] == ["moved True True", "memory refused"]


def test_a_process_the_candidate_starts_cannot_open_the_childs_memory(server, tmp_path):
    """The child's own ``/proc/<pid>`` is writable for CUDA's sake, and so for every process in its
    Landlock domain: a process the candidate starts (nothing forbids one without a policy) could
    rewrite the child's memory through ``mem`` (a function in a module's dictionary, swapped in
    place where no Python check looks). The child is non-dumpable before the candidate runs: its
    ``mem`` and ``environ`` are refused to every other process, even one running as root."""
    child = spawn(server, tmp_path, "memory_writer")
    probe = ("import os, sys\n"
             "for name, mode in (('mem', 'r+b'), ('environ', 'rb')):\n"
             "    try:\n"
             "        open(f'/proc/{os.getppid()}/{name}', mode).close()\n"
             "        print(name, 'opened')\n"
             "    except OSError as exc:\n"
             "        print(name, 'refused', type(exc).__name__)\n")
    try:
        with pytest.raises(CandidateError) as raised:
            child.request("import", 60, path=write(tmp_path, "memory_writer", f"""
                import subprocess, sys
                out = subprocess.run([sys.executable, "-c", {probe!r}], capture_output=True, text=True)
                raise RuntimeError("PROBE " + " / ".join(out.stdout.split("\\n")) + out.stderr[-300:])
            """))
    finally:
        child.close()
    if child.unconfined:
        pytest.skip(child.unconfined)
    message = str(raised.value)
    assert "PROBE" in message, message
    assert "mem refused PermissionError" in message and "environ refused PermissionError" in message, message


def test_no_code_in_the_child_opens_its_own_memory_for_writing(server, tmp_path):
    """CUDA needs the child's own ``/proc/<pid>`` writable while it starts (it names its threads
    there), and that folder holds ``mem``: a finalizer the collector runs from the harness's frames
    (no frame of the candidate's on the stack, so the guard blames nobody) opened it read-write, and
    the candidate rewrote a function in a module's dictionary in place on its next call. Once CUDA is
    up the child confines itself again without that folder: the open is refused by the kernel."""
    child = spawn(server, tmp_path, "own_memory")
    try:
        child.request("import", 60, path=write(tmp_path, "own_memory_plant", """
            import os, weakref

            class Cycle:
                pass

            c = Cycle()
            c.me = c
            weakref.finalize(c, os.open, "/proc/self/mem", os.O_RDWR)
            del c
            JUNK = [[] for _ in range(5000)]  # kept: the collector runs as soon as the harness allocates

            class ModelNew:
                pass
        """))
        with pytest.raises(CandidateError) as raised:
            child.request("import", 60, path=write(tmp_path, "own_memory_find", """
                import os
                found = []
                for name in os.listdir("/proc/self/fd"):
                    try:
                        if os.readlink("/proc/self/fd/" + name).endswith("/mem"):
                            found.append(name)
                    except OSError:
                        pass
                raise RuntimeError("FOUND " + repr(found))
            """))
    finally:
        child.close()
    if child.unconfined:
        pytest.skip(child.unconfined)
    assert "FOUND []" in str(raised.value), str(raised.value)
    assert "PermissionError: [Errno 13] Permission denied: '/proc/self/mem'" in (tmp_path / "own_memory.log").read_text()


def test_no_code_in_the_child_reads_its_own_memory(server, tmp_path):
    """The harness's key and the judge's values in flight are in the child's memory: its ``mem`` (and
    every thread's) is refused for reading whatever the path (``self``, the pid, a thread's folder, a
    folder descriptor, a link), while the rest of ``/proc/self`` (``maps``,
    ``status``) stays readable."""
    child = spawn(server, tmp_path, "own_memory_reader")
    (tmp_path / "link").symlink_to("/proc/self/mem")  # as a process the candidate started could make it
    try:
        with pytest.raises(CandidateError) as raised:
            child.request("import", 60, path=write(tmp_path, "own_memory_reader", f"""
                import os
                pid = os.getpid()
                own = os.open(f"/proc/{{pid}}", os.O_RDONLY | os.O_DIRECTORY)
                paths = ["/proc/self/mem", f"/proc/{{pid}}/mem", "/proc/thread-self/mem",
                         f"/proc/self/task/{{pid}}/mem", "/proc/self/root/proc/self/mem", {str(tmp_path / "link")!r},
                         ("mem", own), "/proc/self/maps", "/proc/self/status"]
                seen = []
                for path in paths:
                    name, folder = path if isinstance(path, tuple) else (path, None)
                    try:
                        os.close(os.open(name, os.O_RDONLY, dir_fd=folder))
                        seen.append("read")
                    except PermissionError:
                        seen.append("refused")
                raise RuntimeError("SEEN " + " ".join(seen))
            """))
    finally:
        child.close()
    if child.unconfined:
        pytest.skip(child.unconfined)
    assert "SEEN " + " ".join(["refused"] * 7 + ["read"] * 2) in str(raised.value), str(raised.value)


def test_an_import_by_the_candidate_writes_no_bytecode(server, tmp_path):
    """A module the candidate imports whose bytecode is not cached yet (a fresh install, a fresh
    checkout) must not make the import a file write from the candidate's call: the child writes no
    bytecode, whatever the fork server's interpreter read from its own environment."""
    library = tmp_path / "library"
    library.mkdir()
    (library / "fresh_helper.py").write_text("def plus_one(x):\n    return x + 1\n")
    child = spawn(server, tmp_path, "importer")
    try:
        child.request("import", 30, path=write(tmp_path, "importer", f"""
            import sys
            sys.path.insert(0, {str(library)!r})
            import fresh_helper
            import torch

            class ModelNew(torch.nn.Module):
                def forward(self, x):
                    return fresh_helper.plus_one(x)
        """))
    finally:
        child.close()
    assert not (library / "__pycache__").exists()
