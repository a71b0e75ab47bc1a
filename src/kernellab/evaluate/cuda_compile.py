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


# A CPU build of torch ships the c10/cuda headers but not this one, which CUDA builds generate at
# build time from cuda_cmake_macros.h.in; the stand-in says what that template says for a shared build.
_GENERATED = {"c10/cuda/impl/cuda_cmake_macros.h": "#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n"}


def _generated_header_stand_ins(paths: list[str], root: Path) -> list[str]:
    missing = {name: text for name, text in _GENERATED.items() if not any((Path(p) / name).is_file() for p in paths)}
    for name, text in missing.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return [f"-I{root}"] if missing else []


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

    out_dir = work_dir / "nvcc-check"
    out_dir.mkdir(parents=True, exist_ok=True)
    includes = [f"-I{p}" for p in include_paths()] + [f"-I{sysconfig.get_paths()['include']}"]
    includes += _generated_header_stand_ins(include_paths(), out_dir / "include")
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
