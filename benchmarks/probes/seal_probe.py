"""A process confined as a candidate's child, made non-dumpable before CUDA starts, after
``torch.cuda.init()`` or after its first tensor (``V=before|afterinit|aftertensor``): does CUDA (another
stream, a Triton kernel) still work, and can a process it starts open its memory? Run it as a non-root
user too (``setpriv --reuid=65534 --regid=65534 --clear-groups``): a non-dumpable process's own
``/proc`` files become root's. Prints one line per question."""
import ctypes
import os
import subprocess
import sys
import tempfile

import torch

from kernellab.sandbox import confine

variant = os.environ.get("V", "afterinit")
why = confine.confine_writes([tempfile.mkdtemp(), "/tmp"])
if variant == "before":
    print("seal", confine.seal_memory())
torch.cuda.init()
if variant == "afterinit":
    print("seal", confine.seal_memory())
x = torch.randn(1024, device="cuda")
if variant == "aftertensor":
    print("seal", confine.seal_memory())
try:
    with torch.cuda.stream(torch.cuda.Stream()):
        total = (x * 2).sum()
    torch.cuda.synchronize()
    import triton
    import triton.language as tl

    @triton.jit
    def add_one(p, n, BLOCK: tl.constexpr):
        o = tl.arange(0, BLOCK)
        tl.store(p + o, tl.load(p + o, mask=o < n) + 1, mask=o < n)

    add_one[(1,)](x, 1024, BLOCK=1024)
    torch.cuda.synchronize()
    print(variant, "uid", os.getuid(), "confine", why, "cuda ok", total.item() != 0,
          "dumpable", ctypes.CDLL(None).prctl(3, 0, 0, 0, 0), flush=True)
except Exception as exc:  # noqa: BLE001 - the probe reports whatever CUDA says
    print(variant, "uid", os.getuid(), "confine", why, "ERR", repr(exc)[:300], flush=True)
probe = f"open('/proc/{os.getpid()}/mem', 'r+b'); print('sibling opened mem')"
run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
print(variant, "sibling:", run.stdout.strip() or run.stderr.strip().splitlines()[-1])
