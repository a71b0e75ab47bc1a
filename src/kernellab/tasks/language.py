"""The kernel language of a source file, decided in one place.

A kernel file is CUDA C++ when it builds an extension with ``torch.utils.cpp_extension`` (the
``load_inline`` convention of KernelBench and of the suite's CUDA baselines), Triton otherwise. The
decision reads the syntax tree, not the text, so a comment or a string that mentions
``load_inline`` does not make a Triton file CUDA; a file that does not parse falls back to the text.
The task loader (a baseline's language), the agent workspace (the skeleton and playbook to give)
and the static scan (whether to compile ahead, whether a CPU can run it) all ask here.
"""

from __future__ import annotations

import ast
import enum

_CUDA_NAMES = ("cpp_extension", "load_inline")


class KernelLanguage(str, enum.Enum):
    TRITON = "triton"
    CUDA = "cuda"


def kernel_language(source: str) -> KernelLanguage:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return KernelLanguage.CUDA if any(n in source for n in _CUDA_NAMES) else KernelLanguage.TRITON
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("cpp_extension"):
            return KernelLanguage.CUDA
        if isinstance(node, ast.Import) and any(a.name.endswith("cpp_extension") for a in node.names):
            return KernelLanguage.CUDA
        if isinstance(node, ast.Attribute) and node.attr in _CUDA_NAMES:
            return KernelLanguage.CUDA
    return KernelLanguage.TRITON
