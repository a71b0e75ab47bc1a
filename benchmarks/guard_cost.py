"""What the sandbox guard costs a candidate child.

Measured in children forked from this process after the fork server's imports (torch, triton, the
harness) and ``guard.prepare()``, as the fork server does:

- arming (``guard.arm``) in the child;
- one audited event the guard does not watch, and one it watches but lets pass, against the same
  event with no hook installed;
- the check around every request (``Guard.check``: every namespace's version tag, closure cells,
  process state) and the per-call check (``sys.audit(CALL_RETURNED)``: the hot namespaces);
- a candidate's call with and without the guard: the example RMSNorm candidate on a small input
  (Triton interpreter without a GPU, the GPU otherwise), and how many audited events one call raises.

    python benchmarks/guard_cost.py [--calls 50] [--rounds 5] [--out benchmarks/results/guard_cost.json]
"""

from __future__ import annotations

import argparse
import collections
import functools
import importlib.util
import itertools
import json
import os
import statistics
import sys
import threading
import time
import typing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "rmsnorm_triton.py"


def _in_child(fn) -> dict:
    """Run ``fn()`` in a forked child; return the dict it returns."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read)
        try:
            result = fn()
        except BaseException as exc:  # noqa: BLE001 - reported
            result = {"error": f"{type(exc).__name__}: {exc}"}
        os.write(write, json.dumps(result).encode())
        os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 1 << 16):
        data += chunk
    os.waitpid(pid, 0)
    return json.loads(data or b"{}")


def _per_call_us(fn, n: int) -> float:
    fn()
    started = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - started) * 1e6 / n


def _library_frames_us(n: int) -> float:
    """µs per frame a library takes with no candidate code on the stack (a thread whose frames are
    all the standard library's: this script's own code counts as a candidate's)."""
    frames = map(typing._caller, itertools.repeat(1, n))
    thread = threading.Thread(target=functools.partial(collections.deque, frames, 0))
    started = time.perf_counter()
    thread.start()
    thread.join()
    return (time.perf_counter() - started) * 1e6 / n


def _candidate_call(device: str):
    import torch

    spec = importlib.util.spec_from_file_location("guard_cost_candidate", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.ModelNew(256, 1e-6).to(device)
    x = torch.randn(8, 256, device=device)

    def call():
        with torch.no_grad():
            model(x)
        if device == "cuda":
            torch.cuda.synchronize()

    return call


def measure(armed: bool, calls: int, device: str) -> dict:
    from kernellab.sandbox import child, guard

    child.Harness({"device": device, "interpret": device == "cpu"})
    counts = [0]
    sys.addaudithook(lambda event, args: counts.__setitem__(0, counts[0] + 1))
    result: dict = {}
    if armed:
        started = time.perf_counter()
        handle = guard.arm()
        result["arm_ms"] = (time.perf_counter() - started) * 1e3
        result["check_us"] = statistics.median(_per_call_us(handle.check, 20) for _ in range(5))
        result["call_check_us"] = _per_call_us(lambda: sys.audit(guard.CALL_RETURNED), 500)
        result["library_frame_us"] = _library_frames_us(20000)
        result["library_frame_for_candidate_us"] = _per_call_us(lambda: typing._caller(0), 200)
    result["unwatched_event_us"] = _per_call_us(lambda: sys.audit("guard_cost.unwatched"), 200000)
    call = _candidate_call(device)
    before = counts[0]
    started = time.perf_counter()
    call()  # the first call compiles (and imports what Triton imports lazily)
    result["first_call_ms"] = (time.perf_counter() - started) * 1e3
    result["events_first_call"] = counts[0] - before
    before = counts[0]
    result["call_us"] = statistics.median(_per_call_us(call, calls) for _ in range(3))
    result["events_per_call"] = (counts[0] - before) / (3 * calls + 3)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "guard_cost.json")
    args = parser.parse_args()
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    for name in ("triton", "triton.language", "numpy", "torch.profiler", "torch._dynamo",
                 "triton.compiler.compiler", "triton.runtime.build"):
        __import__(name)
    from kernellab.sandbox import guard

    started = time.perf_counter()
    guard.prepare()
    prepare_ms = (time.perf_counter() - started) * 1e3
    # Children alternate (plain, armed, ...) and each figure is the median over the rounds: a shared
    # machine's load drifts between one child and the next.
    rounds = [(_in_child(lambda: measure(False, args.calls, device)),
               _in_child(lambda: measure(True, args.calls, device))) for _ in range(args.rounds)]
    plain = {k: statistics.median(r[0][k] for r in rounds) for k in rounds[0][0]}
    armed = {k: statistics.median(r[1][k] for r in rounds) for k in rounds[0][1]}
    report = {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu (Triton interpreter)",
              "python": sys.version.split()[0], "prepare_ms": prepare_ms, "without_guard": plain, "with_guard": armed}
    rows = [("prepare in the fork server (once)", f"{prepare_ms:.0f} ms"),
            ("arm in the child", f"{armed.get('arm_ms', float('nan')):.1f} ms"),
            ("check around a request", f"{armed.get('check_us', float('nan')):.0f} µs"),
            ("per-call check (CALL_RETURNED)", f"{armed.get('call_check_us', float('nan')):.1f} µs"),
            ("unwatched audited event", f"{plain['unwatched_event_us']:.3f} → {armed['unwatched_event_us']:.3f} µs"),
            ("a library takes a frame (no candidate code running)", f"{armed.get('library_frame_us', 0):.1f} µs"),
            ("a library takes a frame while the candidate runs",
             f"{armed.get('library_frame_for_candidate_us', 0):.0f} µs"),
            ("audited events in the first call / in each later call",
             f"{armed['events_first_call']:.0f} / {armed['events_per_call']:.1f}"),
            ("the first candidate call (compiles)",
             f"{plain['first_call_ms']:.0f} → {armed['first_call_ms']:.0f} ms"),
            ("a later candidate call", f"{plain['call_us']:.0f} → {armed['call_us']:.0f} µs")]
    width = max(len(r[0]) for r in rows)
    print(f"{report['device']}, Python {report['python']}")
    for label, value in rows:
        print(f"  {label:<{width}}  {value}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
