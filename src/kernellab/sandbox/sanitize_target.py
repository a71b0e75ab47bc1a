"""The process compute-sanitizer wraps: import the candidate, call it on the given configs, exit.

compute-sanitizer instruments a whole process from its start, so this cannot be a child of the fork
server: it is a fresh interpreter (``python -m kernellab.sandbox.sanitize_target JOB``). It never sees
the judge's data and sends nothing back but progress marks: only the tool's report is evidence. It
builds the model and the inputs itself from the task's reference, as the compile-ahead helpers do,
calls forward (and backward where asked) once per item, synchronises and exits.

Progress marks (one JSON line each, with ``time.time()``) go to a file the judge named, so it can
tell the tool's failure to run (no ``ready`` mark: the interpreter, torch or the CUDA context under
the tool never came up) from the candidate's (``raised`` while its code ran, or no ``done`` mark),
and where the seconds went. Exit status: 0 done, 3 the candidate raised, 4 the harness could not
start, 5 the judge that asked for it is gone (a judge killed mid-check, by a campaign's time limit or
a ``timeout``, must not leave the tool running on the GPU for minutes beside whatever comes next).

The job (JSON): ``candidate`` (path), ``source`` and ``where`` (the reference module and its file),
``seed``, ``fp32_precision``, ``status_path``, ``log_path`` (the candidate's stdout and stderr),
``judge_pid`` (optional: the process to end with), and
``items``: ``[{"label", "values", "dtype", "keep_dtype", "grad_inputs" (None: forward only)}]``.
"""

from __future__ import annotations

import json
import os
import select
import sys
import threading
import time
import traceback
from typing import Any

from kernellab.sandbox.confine import close_after_start, confine_writes

DONE, RAISED, SETUP_FAILED, JUDGE_GONE = 0, 3, 4, 5


class _Marks:
    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def __call__(self, phase: str, **extra: Any) -> None:
        os.write(self.fd, (json.dumps({"phase": phase, "t": time.time(), **extra}) + "\n").encode())


def _describe(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:400]


def _redirect_output(log_path: str) -> None:
    """The candidate's prints (Python, ``printf``, ``tl.device_print``) go to its log, at the fd level."""
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)


def _autotune_runs_each_config_once() -> None:
    """``@triton.autotune`` benchmarks every config with ``do_bench`` on each new key: a hundred runs
    or more of each, plus a 256 MiB L2-flush memset before each, every access of which the tool
    instruments (minutes per key under memcheck). Here each config runs once instead, so each one is
    checked, and all measure the same, so the first is taken."""
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return

    def once(kernel_call, quantiles=None, **_):
        kernel_call()
        return [1.0] * len(quantiles) if quantiles else 1.0

    Autotuner.do_bench = property(lambda self: once)


def _end_with(pid: int) -> None:
    """Exit the moment process ``pid`` ends (a pidfd turns readable; no pid reuse can fool it)."""
    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:
        os._exit(JUDGE_GONE)
    except OSError:  # no pidfds here: poll instead
        handle = None

    def watch() -> None:
        if handle is not None:
            select.select([handle], [], [])
        else:
            while os.path.exists(f"/proc/{pid}"):
                time.sleep(1.0)
        os._exit(JUDGE_GONE)

    threading.Thread(target=watch, name="judge-watch", daemon=True).start()


_WRITABLE = ("HOME", "TMPDIR", "TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR")


def main(argv: list[str]) -> int:
    with open(argv[1]) as f:
        job = json.load(f)
    # Confined as the checking child is, before any thread of its own: it writes only in its folder
    # and the child's compile folders (never the judge's caches or a task's files), its own /proc
    # folder only until CUDA is up, and nothing else opens its memory.
    writable = [os.environ[k] for k in _WRITABLE if os.environ.get(k)]
    writable += [os.path.dirname(os.path.abspath(job[k])) for k in ("status_path", "log_path")]
    unconfined = confine_writes(writable)
    if job.get("judge_pid"):
        _end_with(int(job["judge_pid"]))
    mark = _Marks(job["status_path"])
    mark("started")
    _redirect_output(job["log_path"])
    try:
        import torch

        mark("torch")
        from kernellab.tasks.materialize import (build_model, cast_model, flatten_outputs, forward_input_names,
                                                 module_init_inputs, module_inputs)
        from kernellab.tasks.module import build_module

        tf32 = job.get("fp32_precision") == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        _autotune_runs_each_config_once()
        torch.cuda.init()
        torch.zeros(1, device="cuda").add_(1)
        torch.cuda.synchronize()
        # Whether torch's caching allocator is off (PYTORCH_NO_CUDA_MEMORY_CACHING): then every
        # allocation is its own cudaMalloc, which initcheck and memcheck need to see.
        probe = torch.empty(16, device="cuda")
        cached = torch.cuda.memory_reserved() > 0
        del probe
        mark("ready", cached=cached, unconfined=close_after_start(writable, unconfined))
    except BaseException as exc:  # noqa: BLE001 - the harness (or the tool under it) could not start
        traceback.print_exc()
        mark("setup_failed", error=_describe(exc))
        return SETUP_FAILED
    phase, label = "import", ""
    try:
        from kernellab.sandbox.candidate_module import load_candidate
        from kernellab.sandbox.own_compiles import mark_own_compiles

        # The same renamed sources the checking child built: its Triton cache and extension builds,
        # which this process shares, are then loaded as they are. A build from the plain source would
        # be a different one, compiled again into the shared folder over the checked one.
        mark_own_compiles(job["candidate"])
        _module, model_cls = load_candidate(job["candidate"], f"kernellab_candidate_{os.getpid()}",
                                            bool(job.get("reference_class")))
        mark("imported")
        for item in job["items"]:
            label = f"{item['label']} {item['dtype']}" + (" backward" if item.get("grad_inputs") is not None else "")
            phase = "inputs"
            reference = build_module(job["source"], item["values"], name="reference", where=job["where"])
            init_inputs = module_init_inputs(reference)
            dtype, keep = item["dtype"], item["keep_dtype"]
            inputs = module_inputs(reference, job["seed"], "cuda", dtype, keep)
            names = forward_input_names(reference)
            phase = "call"
            model = cast_model(build_model(model_cls, init_inputs, job["seed"]), dtype, keep, "cuda")
            grad_inputs = item.get("grad_inputs")
            if grad_inputs is None:
                with torch.no_grad():
                    model(*inputs)
            else:
                wrt = [x for x, name in zip(inputs, names) if name in grad_inputs
                       and isinstance(x, torch.Tensor) and x.is_floating_point()]
                for x in wrt:
                    x.requires_grad_(True)
                outs = [t for t in flatten_outputs(model(*inputs)) if isinstance(t, torch.Tensor) and t.requires_grad]
                params = [p for p in model.parameters() if p.requires_grad]
                if outs and wrt + params:
                    torch.autograd.grad(outs, wrt + params, [torch.randn_like(t) for t in outs], allow_unused=True)
            torch.cuda.synchronize()
            del model, inputs
            mark("item", label=label)
    except BaseException as exc:  # noqa: BLE001 - candidate code may raise anything
        traceback.print_exc()
        mark("raised", where=phase, label=label, error=_describe(exc))
        return RAISED
    mark("done")
    if job.get("fast_exit"):  # no teardown of torch and the CUDA context
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(DONE)
    return DONE


if __name__ == "__main__":
    sys.exit(main(sys.argv))
