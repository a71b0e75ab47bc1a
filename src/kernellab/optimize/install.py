"""Install verified kernels into a model: ``kernellab.apply(model, DIR)``.

Every kernel in ``DIR/kernels`` becomes a torch custom op (``torch.library.custom_op``, namespace
``kernellab_opt``) with a fake implementation (the task's reference run on fake tensors, so
``torch.compile`` traces it without a graph break) and an autograd formula. The model is captured by
Dynamo and each captured FX graph is rewritten: the same chain matchers that found the op when
profiling (``chains.find_chains``) find it again, and every chain whose kind, constants and fixed
dimensions equal an op record's is replaced by one call of that op. Nothing is keyed on module types:
any op or chain ``optimize`` extracted is installed the same way.

At run time the op checks its inputs: a dtype or a fixed dimension (anything but batch and sequence)
the kernel was not verified on runs the task's reference instead, the original computation.

Backward: the op saves its inputs and, in backward, recomputes its outputs under autograd and asks
for the gradients: through the kernel's own backward where the kernel was verified with one
(``--mode train``), otherwise through the reference. Saving inputs rather than intermediates is also
what keeps activation memory low.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import fx, nn

from kernellab.optimize.chains import FUSED_KINDS, Chain, find_chains
from kernellab.optimize.graph import CapturedGraph, dtype_of, shape_of
from kernellab.optimize.kinds import KindSpec, kind_of
from kernellab.optimize.records import OpRecord, read_ops

log = logging.getLogger(__name__)

NAMESPACE = "kernellab_opt"
_OPS: dict[str, Any] = {}  # op name -> registered custom op (a process registers each name once)


def _load_module(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@dataclass
class InstalledKernel:
    record: OpRecord
    kind: KindSpec
    kernel: nn.Module
    reference: nn.Module
    op: Any = None
    rewrites: int = 0  # chains replaced in captured graphs
    kernel_calls: int = 0
    fallback_calls: int = 0
    _device: torch.device | None = None

    def usable(self, inputs: list[torch.Tensor]) -> bool:
        """The kernel runs only on what it was verified on: its dtype, its fixed dimensions, its device."""
        first = next((t for t in inputs if t.is_floating_point()), None)
        if first is None or str(first.dtype).replace("torch.", "") not in self.record.verified_dtypes:
            return False
        for t, fixed in zip(inputs, self.record.fixed):
            for dim, size in fixed.items():
                if dim >= t.dim() or t.shape[dim] != size:
                    return False
        return True

    def on(self, module: nn.Module, device: torch.device) -> nn.Module:
        """The module on ``device`` (its own parameters are replaced at each call; buffers follow)."""
        if self._device != device:
            self.kernel.to(device)
            self.reference.to(device)
            self._device = device
        return module

    def run(self, inputs: list[torch.Tensor]) -> Any:
        if self.usable(inputs):
            self.kernel_calls += 1
            return self.kind.call(self.on(self.kernel, inputs[0].device), inputs)
        self.fallback_calls += 1
        return self.kind.call(self.on(self.reference, inputs[0].device), inputs)


def _autograd_inside_op() -> Any:
    """A custom op's implementation runs with autograd excluded from dispatch; the backward op
    recomputes its outputs under autograd, so it lets autograd back in for that block."""
    excluded = torch._C._dispatch_tls_local_exclude_set().remove(torch._C.DispatchKey.AutogradFunctionality)
    return torch._C._ForceDispatchKeyGuard(torch._C._dispatch_tls_local_include_set(), excluded)


def _unaliased(outs: list[torch.Tensor], inputs: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
    """A custom op's results may alias neither its inputs nor each other (torch.library checks): a
    kernel that hands back a gradient it was given (the residual's of an add + norm) or one tensor
    for two results gets a copy where the storage was already seen."""
    seen = {t.untyped_storage().data_ptr() for t in inputs if isinstance(t, torch.Tensor)}
    out = []
    for o in outs:
        ptr = o.untyped_storage().data_ptr()
        if ptr in seen and o.numel():
            o = o.contiguous().clone()
            ptr = o.untyped_storage().data_ptr()
        seen.add(ptr)
        out.append(o)
    return out


def _register(k: InstalledKernel, outputs: int, digest: str) -> Any:
    name = f"k{k.record.slug}_{digest}".replace("-", "_")
    if name in _OPS:  # registered earlier in this process: the same files; calls now go to ``k``
        _, holder = _OPS[name]
        holder[0] = k
        return getattr(getattr(torch.ops, NAMESPACE), name).default
    holder = [k]
    n = len(k.record.shapes)
    args = ", ".join(f"Tensor t{i}" for i in range(n))
    ret = "Tensor" if outputs == 1 else "(" + ", ".join(["Tensor"] * outputs) + ")"

    def impl(*ts: torch.Tensor) -> Any:
        out = holder[0].run(list(ts))
        return tuple(_unaliased(list(out), ts)) if isinstance(out, tuple) else _unaliased([out], ts)[0]

    op = torch.library.custom_op(f"{NAMESPACE}::{name}", impl, mutates_args=(), schema=f"({args}) -> {ret}")

    @op.register_fake
    def _fake(*ts: torch.Tensor) -> Any:
        return k.kind.call(k.reference, list(ts))

    grads_of = [i for i, dt in enumerate(k.record.dtypes) if dt in ("float32", "bfloat16", "float16")]
    bwd_args = ", ".join([f"Tensor t{i}" for i in range(n)] + [f"Tensor g{j}" for j in range(outputs)])

    def bwd_impl(*ts: torch.Tensor) -> list[torch.Tensor]:
        inputs, grads = list(ts[:n]), list(ts[n:])
        k = holder[0]
        module = k.kernel if (k.record.backward and k.usable(inputs)) else k.reference
        with _autograd_inside_op(), torch.enable_grad():
            leaves = [t.detach().requires_grad_(i in grads_of) for i, t in enumerate(inputs)]
            out = k.kind.call(k.on(module, inputs[0].device), leaves)
            outs = list(out) if isinstance(out, tuple) else [out]
            wrt = [leaves[i] for i in grads_of]
            got = torch.autograd.grad(outs, wrt, grads, allow_unused=True)
        return _unaliased([g if g is not None else torch.zeros_like(w) for g, w in zip(got, wrt)], ts)

    bwd = torch.library.custom_op(f"{NAMESPACE}::{name}_backward", bwd_impl, mutates_args=(),
                                  schema=f"({bwd_args}) -> Tensor[]")

    @bwd.register_fake
    def _bwd_fake(*ts: torch.Tensor) -> list[torch.Tensor]:
        return [torch.empty_like(ts[i]) for i in grads_of]

    def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
        ctx.save_for_backward(*inputs)
        outs = output if isinstance(output, tuple) else (output,)
        ctx.meta = [(o.shape, o.dtype, o.device) for o in outs]

    def backward(ctx: Any, *grads: torch.Tensor) -> tuple:
        inputs = ctx.saved_tensors
        filled = [g if g is not None else torch.zeros(s, dtype=d, device=dev) for g, (s, d, dev) in zip(grads, ctx.meta)]
        got = bwd(*inputs, *filled)
        out: list[Any] = [None] * n
        for i, g in zip(grads_of, got):
            out[i] = g
        return tuple(out)

    op.register_autograd(backward, setup_context=setup_context)
    _OPS[name] = (op, holder)
    return getattr(getattr(torch.ops, NAMESPACE), name).default  # the OpOverload graphs call


def load_kernels(out: Path) -> list[InstalledKernel]:
    """The verified kernels of an optimize folder, each registered as a custom op."""
    out = Path(out)
    installed = []
    for record in read_ops(out):
        if record.kernel is None or not record.installed_candidate:
            continue
        kind = kind_of(record.kind, record.spec, record.shapes)
        if kind is None:
            continue
        task = out / record.task
        ref_mod = _load_module(task / "reference.py", f"kernellab_opt_ref_{record.slug}")
        kernel_path = out / record.kernel
        digest = hashlib.sha256(kernel_path.read_bytes() + (task / "reference.py").read_bytes()).hexdigest()[:10]
        ker_mod = _load_module(kernel_path, f"kernellab_opt_kernel_{record.slug}_{digest}")
        init = list(ref_mod.get_init_inputs())
        k = InstalledKernel(record, kind, ker_mod.ModelNew(*init), ref_mod.Model(*init))
        outputs = _output_count(task)
        k.op = _register(k, outputs, digest)
        installed.append(k)
    return installed


def _output_count(task: Path) -> int:
    import tomllib

    meta = tomllib.loads((task / "task.toml").read_text())
    return max(len(meta.get("outputs", [])), 1)


def _same_chain(chain: Chain, record: OpRecord) -> bool:
    if chain.kind != record.kind or {k: str(v) for k, v in chain.spec.items()} != \
            {k: str(v) for k, v in record.spec.items()} or len(chain.inputs) != len(record.shapes):
        return False
    for node, fixed in zip(chain.inputs, record.fixed):
        shape = shape_of(node)
        if shape is None or any(d >= len(shape) or shape[d] != s for d, s in fixed.items()):
            return False
    dt = dtype_of(chain.inputs[0])
    return dt is not None


def rewrite(gm: fx.GraphModule, kernels: list[InstalledKernel]) -> int:
    """Replace every chain that an installed kernel implements by one call of its op; how many."""
    done = 0
    # wider chains no kernel implements are not formed, so the narrower ones inside them are found
    skip = FUSED_KINDS - {k.record.kind for k in kernels}
    tried: set[fx.Node] = set()
    while True:  # one chain at a time: a replacement changes the nodes later chains read
        found = None
        for chain in find_chains(gm, skip):
            k = next((k for k in kernels if _same_chain(chain, k.record)), None)
            if k is not None and chain.anchor not in tried:
                found = (chain, k)
                break
        if found is None:
            break
        chain, k = found
        tried.add(chain.anchor)
        if _replace(gm, chain, k.op):
            k.rewrites += 1
            done += 1
    if done:
        gm.graph.lint()
        gm.recompile()
    return done


def _replace(gm: fx.GraphModule, chain: Chain, op: Any) -> bool:
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    members = set(chain.nodes)
    users = [u for o in chain.outputs for u in o.users if u not in members]
    if not users:
        return False
    first_user = min(users, key=lambda u: order[u])
    if any(isinstance(i, fx.Node) and order[i] >= order[first_user] for i in chain.inputs):
        return False
    with gm.graph.inserting_before(first_user):
        call = gm.graph.call_function(op, tuple(chain.inputs))
        results = [call] if len(chain.outputs) == 1 else \
            [gm.graph.call_function(__import__("operator").getitem, (call, i)) for i in range(len(chain.outputs))]
    for old, new in zip(chain.outputs, results):
        new.meta.update(old.meta)  # shapes stay readable for the chains matched after this one
        old.replace_all_uses_with(new, delete_user_cb=lambda u: u not in members)
    for node in sorted(members, key=lambda n: -order[n]):
        if not node.users:
            gm.graph.erase_node(node)
    return True


class Installer:
    """A Dynamo backend: rewrite each captured graph, then run it as is (eager) or through Inductor."""

    def __init__(self, kernels: list[InstalledKernel], *, then: str | None = None):
        self.kernels = kernels
        self.then = then  # a Dynamo backend name to hand the rewritten graphs to ("inductor"), or None: eager
        self.graphs: list[CapturedGraph] = []

    def __call__(self, gm: fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        rewrite(gm, self.kernels)
        self.graphs.append(CapturedGraph(len(self.graphs), gm, list(example_inputs)))
        if self.then is not None:
            return torch._dynamo.lookup_backend(self.then)(gm, example_inputs)
        return gm.forward


def apply(model: nn.Module, out: str | Path, *, compile: bool | str = False,
          only: list[str] | None = None) -> nn.Module:
    """``model`` with the verified kernels of ``out`` (a ``kernellab optimize`` folder) installed.

    Returns a compiled wrapper sharing the model's parameters: eager execution of the rewritten
    graphs, or with ``compile=True`` Inductor on them (the custom ops stay opaque calls, no graph
    break; ``compile="aot_eager"`` or any Dynamo backend name hands them to that backend instead). ``only``: slugs to install (default every kernel the end-to-end check kept).
    ``.kernellab_installer`` on the result tells how many chains each kernel replaced. Dynamo may
    reuse code it compiled for the same function under another backend: call ``torch._dynamo.reset()``
    first when the same model was compiled before in this process."""
    kernels = [k for k in load_kernels(Path(out)) if only is None or k.record.slug in only]
    installer = Installer(kernels, then=("inductor" if compile is True else compile or None))
    wrapped = torch.compile(model, backend=installer)
    wrapped.kernellab_installer = installer
    return wrapped
