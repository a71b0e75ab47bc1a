"""``kernellab doctor``: what this machine can do, and what it cannot, with the reason."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from kernellab.cli.options import Json, plural

_TRITON_PROBE = """
import os, torch, triton, triton.language as tl
@triton.jit
def k(x_ptr, n, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(x_ptr + o, tl.load(x_ptr + o, mask=o < n) + 1, mask=o < n)
x = torch.zeros(8, device="cuda" if torch.cuda.is_available() and not os.environ.get("TRITON_INTERPRET") else "cpu")
k[(1,)](x, 8, B=8)
assert float(x.sum()) == 8.0
"""


def _version(cmd: list[str]) -> str | None:
    if shutil.which(cmd[0]) is None:
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip().splitlines()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out[-1] if out else "present"


def _probe_triton(interpret: bool) -> tuple[bool, str]:
    import os

    env = dict(os.environ)
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    proc = subprocess.run([sys.executable, "-c", _TRITON_PROBE], capture_output=True, text=True, env=env,
                          timeout=300)
    if proc.returncode == 0:
        return True, "ran a kernel"
    last = (proc.stderr.strip().splitlines() or ["failed"])[-1]
    return False, last[:160]


def _probe_sandbox() -> tuple[bool, str]:
    from kernellab.sandbox.forkserver import ForkServer

    work = Path(tempfile.mkdtemp(prefix="kernellab-doctor-"))
    started = time.perf_counter()
    try:
        server = ForkServer({"PATH": "/usr/bin:/bin", "HOME": str(work)}, work / "forkserver.log")
        server.close()
    except Exception as exc:  # noqa: BLE001 - report, don't crash
        return False, f"fork server failed: {exc}"
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return True, f"fork server up in {time.perf_counter() - started:.1f} s"


def _probe_confinement() -> tuple[bool, str]:
    """Whether a candidate's process here can be kept to its own folder (Landlock), tried in a fresh
    interpreter (confinement cannot be undone)."""
    work = Path(tempfile.mkdtemp(prefix="kernellab-doctor-"))
    code = "import sys; from kernellab.sandbox.confine import confine_writes; print(confine_writes(sys.argv[1:]) or '')"
    try:
        proc = subprocess.run([sys.executable, "-c", code, str(work)], capture_output=True, text=True, timeout=60)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    why = proc.stdout.strip() if proc.returncode == 0 else (proc.stderr.strip().splitlines() or ["failed"])[-1]
    if why:
        return False, f"a candidate's process could write anywhere this user can: {why}"
    return True, "a candidate's process writes only in its own folder and the GPU's device files; no privileges"


def doctor_command(as_json: Json = False) -> None:
    """Report versions, GPU, compilers, profilers and whether kernels can run here."""
    import torch

    from kernellab.evaluate.session import versions

    checks: list[dict] = []

    def row(name: str, ok: bool | None, detail: str) -> None:
        checks.append({"check": name, "ok": ok, "detail": detail})

    for name, value in versions().items():
        row(name, True, value)
    gpu = torch.cuda.is_available()
    if gpu:
        props = torch.cuda.get_device_properties(0)
        row("cuda gpu", True, f"{props.name}, sm_{props.major}{props.minor}, {props.total_memory / 2**30:.0f} GiB, "
                              f"{plural(torch.cuda.device_count(), 'device')}")
    else:
        row("cuda gpu", False, "no GPU: Triton candidates run under the interpreter on small configs, "
                               "timings are null, CUDA C++ candidates are compile-checked only")
    for tool, cmd in (("nvcc", ["nvcc", "--version"]), ("ncu", ["ncu", "--version"]),
                      ("compute-sanitizer", ["compute-sanitizer", "--version"])):
        found = _version(cmd)
        row(tool, found is not None, found or "not on PATH")
    ok, detail = _probe_triton(interpret=not gpu)
    row("triton " + ("(GPU)" if gpu else "(interpreter)"), ok, detail)
    ok, detail = _probe_sandbox()
    row("sandbox", ok, detail)
    ok, detail = _probe_confinement()
    row("write confinement", ok, detail)
    mode = "gpu" if gpu else "interpret"
    if as_json:
        print(json.dumps({"checks": checks, "eval_mode": mode}, indent=1))
        raise typer.Exit(0)
    table = Table(show_header=True, show_edge=False)
    for col in ("check", "ok", "detail"):
        table.add_column(col)
    for c in checks:
        table.add_row(Text(c["check"]), _OK_MARK[c["ok"]], Text(c["detail"]))  # details as written, no markup
    console = Console()
    console.print(table)
    console.print(f"kernellab eval runs here in [bold]{mode}[/] mode.")
    raise typer.Exit(0)


_OK_MARK = {True: "[green]yes[/]", False: "[red]no[/]", None: "[dim]—[/]"}
