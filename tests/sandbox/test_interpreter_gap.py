"""Interpreter gaps are recognised by the harness, in the child, from where an exception was raised;
never from the exception's text, which the candidate writes. Real fork server, real children under
``TRITON_INTERPRET=1``, real Triton kernels."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
import torch

from kernellab.sandbox import interpreter_gap
from kernellab.sandbox.candidate import CandidateError, CandidateProcess, ChildSpec

HEADER = textwrap.dedent("""
    import torch
    import torch.nn as nn
    import triton
    import triton.language as tl
""")

# Each candidate computes y = f(x) with one kernel launch; ``KERNEL`` is the body's middle line.
TEMPLATE = HEADER + textwrap.dedent("""
    {imports}

    @triton.jit
    def _kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < N, other=1.0)
        {kernel}
        tl.store(y_ptr + offs, y, mask=offs < N)

    class ModelNew(nn.Module):
        def forward(self, x):
            {host}
            y = torch.empty_like(x)
            _kernel[(1,)](x, y, x.numel(), BLOCK=triton.next_power_of_2(x.numel()))
            return y
""")

GAPS = {
    # triton.language.extra.libdevice: a stub whose interpreted body returns None
    "libdevice_stub": ("from triton.language.extra.libdevice import rsqrt", "y = rsqrt(x)", "pass",
                       "extra_function"),
    # the CUDA backend's libdevice: a builtin the interpreter does not patch
    "cuda_libdevice": ("from triton.language.extra.cuda import libdevice", "y = libdevice.rsqrt(x)", "pass",
                       "extra_function"),
    "inline_asm": ("", 'y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.float32, '
                   'is_pure=True, pack=1)', "pass", "inline_asm"),
    "extern_elementwise": ("from triton.language import core",
                           'y = core.extern_elementwise("", "", [x], {(tl.float32,): ("__nv_rsqrtf", tl.float32)}, '
                           'is_pure=True)', "pass", "extern_elementwise"),
    "driver": ("", "y = x", "triton.runtime.driver.active.get_current_device()", "no_driver"),
}

NOT_GAPS = {
    # the interpreter's own words, raised by the candidate (in its kernel, during the launch)
    "text_in_kernel": ("", 'raise NotImplementedError("extern_elementwise not supported in interpreter mode")',
                       "pass"),
    "text_in_forward": ("", "y = x", 'raise RuntimeError("0 active drivers ([]). not supported")'),
    # a real gap's function, called from host code: it fails on a GPU as well
    "stub_on_the_host": ("from triton.language.extra.libdevice import rsqrt", "y = x", "rsqrt(x)"),
    # interpreter internals called directly from the kernel instead of through triton.language
    "builder_internals": ("from triton.runtime.interpreter import interpreter_builder",
                          "y = interpreter_builder.create_inline_asm('', '', [], None, True, 1)", "pass"),
    # a plain bug inside the kernel: None arithmetic, as the libdevice stub once produced
    "none_in_kernel": ("", "y = None + x", "pass"),
}


@pytest.fixture(scope="module")
def server():
    from kernellab.sandbox.forkserver import ForkServer

    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"gap-forkserver-{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work), "TRITON_INTERPRET": "1"}
    srv = ForkServer(env, work / "forkserver.log")
    yield srv
    srv.close()


def _raised(server, tmp_path: Path, name: str, imports: str, kernel: str, host: str) -> CandidateError | None:
    path = tmp_path / f"{name}.py"
    path.write_text(TEMPLATE.format(imports=imports, kernel=kernel, host=host))
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "TRITON_INTERPRET": "1",
           "TRITON_CACHE_DIR": str(tmp_path / "triton")}
    child = CandidateProcess(server, ChildSpec("cpu", True, env, tmp_path / f"{name}.log"))
    try:
        child.request("import", 60, path=str(path))
        child.request("instantiate", 60, key="k", init_inputs=[], seed=0, state={}, dtype="float32", keep_dtype=[])
        child.request("run", 60, key="k", calls=[{"inputs": [torch.rand(8) + 1]}], poison_bytes=[], profile=False)
    except CandidateError as exc:
        return exc
    finally:
        child.close()
    return None


@pytest.mark.parametrize("name", sorted(GAPS))
def test_a_real_gap_is_named_by_the_harness(server, tmp_path, name):
    imports, kernel, host, gap = GAPS[name]
    raised = _raised(server, tmp_path, name, imports, kernel, host)
    assert raised is not None, "the interpreter ran it: this triton has no such gap any more"
    assert raised.interpreter_gap == gap, (raised.exc_type, str(raised), raised.traceback[-600:])


@pytest.mark.parametrize("name", sorted(NOT_GAPS))
def test_the_candidates_own_exception_is_never_a_gap(server, tmp_path, name):
    raised = _raised(server, tmp_path, name, *NOT_GAPS[name])
    assert raised is not None
    assert raised.interpreter_gap is None, (raised.exc_type, str(raised))


def test_classification_reads_where_an_exception_was_raised_not_its_words():
    """In-process: the same words, raised here, name no gap; the table's entries are all reachable."""
    for words in ("extern_elementwise not supported in interpreter mode", "0 active drivers",
                  "inline_asm not supported in interpreter mode", "has no implementation in the Triton interpreter"):
        for cls in (NotImplementedError, RuntimeError, interpreter_gap.NoInterpreterImplementation):
            try:
                raise cls(words)
            except cls as exc:
                assert interpreter_gap.classify(exc) is None
    assert {g.name for g in interpreter_gap.GAPS} == interpreter_gap.GAP_NAMES
    assert all(interpreter_gap.describe(name) for name in interpreter_gap.GAP_NAMES)
