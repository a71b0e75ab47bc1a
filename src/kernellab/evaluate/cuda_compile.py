"""Compile-checking CUDA C++ candidates on machines without a GPU.

``load_inline`` prepends headers to the sources it is given; the check prepends the same ones and
compiles each source with ``nvcc -c`` for sm_90, so a syntax or type error shows before GPU time is
spent. It proves nothing about correctness, and the verdict's status stays ``needs_gpu``.
"""

from __future__ import annotations

import shutil
import subprocess
import sysconfig
from dataclasses import dataclass
from pathlib import Path

_PRELUDE = "#include <torch/extension.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n"


@dataclass
class CompileOutcome:
    ran: bool
    ok: bool
    error: str | None = None


def compile_check(sources: list[str], work_dir: Path, timeout_s: float = 300.0) -> CompileOutcome:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return CompileOutcome(False, False, "nvcc not found: cannot compile-check without a GPU")
    if not sources:
        return CompileOutcome(True, False, "no C++/CUDA source found in the candidate")
    from torch.utils.cpp_extension import include_paths

    includes = [f"-I{p}" for p in include_paths()] + [f"-I{sysconfig.get_paths()['include']}"]
    out_dir = work_dir / "nvcc-check"
    out_dir.mkdir(parents=True, exist_ok=True)
    for i, source in enumerate(sources):
        path = out_dir / f"source_{i}.cu"
        path.write_text(_PRELUDE + source)
        cmd = [nvcc, "-std=c++17", "-arch=sm_90", "-c", str(path), "-o", str(path.with_suffix(".o")),
               "-D_GLIBCXX_USE_CXX11_ABI=1", *includes]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return CompileOutcome(True, False, f"nvcc took longer than {timeout_s:.0f} s")
        if proc.returncode != 0:
            first = next((ln for ln in proc.stderr.splitlines() if "error" in ln), proc.stderr.strip()[:300])
            return CompileOutcome(True, False, f"nvcc: {first.strip()}")
    return CompileOutcome(True, True)
