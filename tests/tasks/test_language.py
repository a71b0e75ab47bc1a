"""The kernel language is decided in one place, from the syntax tree, and the verifier agrees."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernellab.evaluate.static_scan import scan_candidate
from kernellab.tasks.language import KernelLanguage, kernel_language
from kernellab.tasks.model import Policy

SUITE = Path(__file__).parents[2] / "src" / "kernellab" / "tasks" / "suite"

TRITON_NAMING_CUDA = '''
import triton
import triton.language as tl

# a CUDA version would use torch.utils.cpp_extension.load_inline; this one does not
NOTE = "load_inline"
'''

CUDA_BY_ALIAS = '''
from torch.utils import cpp_extension as ext
mod = ext.load_inline(name="m", cpp_sources="", cuda_sources="")
'''


def test_a_mention_in_a_comment_or_string_is_not_a_cuda_kernel():
    assert kernel_language(TRITON_NAMING_CUDA) is KernelLanguage.TRITON


def test_an_extension_build_is_cuda_whatever_its_import_form():
    assert kernel_language(CUDA_BY_ALIAS) is KernelLanguage.CUDA
    assert kernel_language("from torch.utils.cpp_extension import load_inline\n") is KernelLanguage.CUDA
    assert kernel_language("import torch.utils.cpp_extension\n") is KernelLanguage.CUDA


@pytest.mark.parametrize("baseline", sorted(SUITE.glob("*/*/baseline.py")), ids=lambda p: p.parent.name)
def test_the_task_loader_and_the_verifier_name_the_same_language(baseline):
    source = baseline.read_text()
    found = scan_candidate(source, str(baseline), Policy.OFF).language
    assert found is None or found == kernel_language(source).value
