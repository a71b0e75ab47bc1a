"""One task (``y = x * scale + 1``), one candidate kernel for it, and the faults the verifier
isolates, spliced into the candidate's forward: what the fault-isolation and campaign-load
benchmarks evaluate."""

from __future__ import annotations

import textwrap
from pathlib import Path

import tomli_w

REFERENCE = textwrap.dedent("""
    import torch
    import torch.nn as nn

    N = {n}

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(1))

        def forward(self, x):
            return x * self.scale + 1.0

    def get_inputs():
        return [torch.randn(N)]

    def get_init_inputs():
        return []
""")

KERNEL = textwrap.dedent("""
    import os, ctypes, time
    import torch
    import torch.nn as nn
    import triton
    import triton.language as tl

    FORKED = []

    @triton.jit
    def scale_kernel(x_ptr, s_ptr, y_ptr, n, OFFSET: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        s = tl.load(s_ptr)
        x = tl.load(x_ptr + offs, mask=mask)
        tl.store(y_ptr + offs + OFFSET, x * s + 1.0, mask=mask)

    class ModelNew(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(1))

        def forward(self, x):
            {fault}
            y = torch.empty_like(x)
            n = x.numel()
            scale_kernel[(triton.cdiv(n, 1024),)](x, self.scale, y, n, OFFSET={offset}, BLOCK=1024)
            return y
""")

# kind -> (statement at the start of forward, store offset in elements)
FAULTS = {
    "segfault": ("import faulthandler; faulthandler._sigsegv()", 0),
    "illegal_address": ("pass", 1 << 40),
    "hang": ("while True: pass", 0),
    "oom": ("torch.empty(1 << 45, dtype=torch.uint8, device=x.device)", 0),
    "os_exit": ("os._exit(0)", 0),
    "fork": ("FORKED or FORKED.append(os.fork() == 0 and (time.sleep(600), os._exit(0)))", 0),
    "stdout_garbage": ("os.write(1, bytes(range(256)) * 16)", 0),
}


def write_task(folder: Path, *, category: str, n: int | str, sizes: list[int], holdout: int,
               policy: str | None = None) -> Path:
    """The task in ``folder``: its reference (``N = n``, a number or an expression) and a ``task.toml`` whose seen configs are
    ``sizes``. ``policy="off"`` lets the faults run instead of being refused by the static scan."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "reference.py").write_text(REFERENCE.replace("{n}", n if isinstance(n, str) else str(n)))
    toml = {"schema": 1, "category": category, "description": "x * scale + 1", "dtypes": ["float32"],
            **({"policy": policy} if policy else {}), "configs": [{"N": n} for n in sizes],
            "edge": [{"N": 1}], "holdout": [{"N": holdout}], "small": [{"N": 1000}]}
    (folder / "task.toml").write_text(tomli_w.dumps(toml))
    return folder


def candidate_source(kind: str) -> str:
    """The candidate with fault ``kind`` (``"good"``: none)."""
    fault, offset = FAULTS.get(kind, ("pass", 0))
    return KERNEL.replace("{fault}", fault).replace("{offset}", str(offset))
