"""Times the search agent's loss, residual-norm and embedding templates (defaults, as rendered for a suite
task) against eager PyTorch, ``torch.compile`` and Liger-Kernel where it has the op, on a GPU.

Each row: the op, its shape and dtype, forward or forward + backward, µs (``triton.testing.do_bench``
median, L2 flushed), GB/s over the op's minimal bytes (inputs read once, outputs written once) and % of
the copy bandwidth measured in the same run, or TFLOP/s for the matmul-bound linear + cross-entropy;
and the template's largest error against float32 eager, so a GPU-only defect (bfloat16 is not checked
under the interpreter) shows next to its time.

    PYTHONPATH=src python benchmarks/fused_ops_timing.py --out results.json [--quick] [--no-compile]
    TRITON_INTERPRET=1 PYTHONPATH=src python benchmarks/fused_ops_timing.py --out x.json --smoke  # CPU: plumbing
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch

from kernellab.kernels import match_templates
from kernellab.tasks.load import load_task


@dataclass
class Row:
    op: str
    shape: str
    dtype: str
    mode: str  # "fwd" or "fwd+bwd"
    impl: str  # eager, compile, liger, search
    us: float | None
    gbps: float | None = None
    pct_copy: float | None = None
    tflops: float | None = None
    max_err: float | None = None
    note: str = ""


DEVICE = "cuda"


def copy_bandwidth() -> float:
    """GB/s of a 1 GiB device-to-device copy (read + write counted)."""
    src = torch.empty(1 << 29 if DEVICE == "cuda" else 1 << 20, dtype=torch.float16, device=DEVICE)
    dst = torch.empty_like(src)
    us = bench(lambda: dst.copy_(src))
    return 2 * src.numel() * 2 / (us * 1e-6) / 1e9


def module_of(source: str, name: str) -> type:
    namespace: dict = {"__name__": f"bench_{name}"}
    exec(compile(source, f"<{name}>", "exec"), namespace)  # noqa: S102 - our own rendered template / reference
    return namespace[name]


def models(task_id: str, template: str, init_args: list, dtype: torch.dtype):
    """(eager reference, template ModelNew) with the same parameters, on the GPU in ``dtype``."""
    task = load_task(task_id)
    match = next(m for m in match_templates(task) if m.template.name == template)
    ref_cls = module_of(task.source, "Model")
    new_cls = module_of(match.render(), "ModelNew")
    torch.manual_seed(0)
    ref = ref_cls(*init_args).to(DEVICE, dtype)
    new = new_cls(*init_args).to(DEVICE, dtype)
    new.load_state_dict(ref.state_dict())
    return ref, new


def bench(fn: Callable[[], object], grad_to_none=None) -> float:
    """µs per call: ``do_bench``'s median (L2 flushed) on a GPU; one timed call on the CPU (plumbing only)."""
    if DEVICE != "cuda":
        start = time.perf_counter()
        fn()
        return (time.perf_counter() - start) * 1e6
    import triton.testing

    return triton.testing.do_bench(fn, warmup=10, rep=60, grad_to_none=grad_to_none) * 1e3


def max_err(got, want) -> float:
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    return max(float((g.float() - w.float()).abs().max()) for g, w in zip(got, want))


def run_case(rows: list[Row], op: str, shape: str, dtype: torch.dtype, ref: torch.nn.Module, new: torch.nn.Module,
             inputs: list, grad_idx: list[int], nbytes: tuple[float, float] | None, flops: tuple[float, float] | None,
             copy_gbps: float, liger: torch.nn.Module | Callable | None, with_compile: bool) -> None:
    """Forward (no grad) and forward + backward rows for eager, compile, Liger and the template."""
    dname = str(dtype).replace("torch.", "")
    impls: dict[str, Callable] = {"eager": ref, "search": new}
    if with_compile:
        impls["compile"] = torch.compile(ref)
    if liger is not None:
        impls["liger"] = liger
    # accuracy: the template against eager in float32 (float32 copies of the same inputs and parameters)
    ref32 = type(ref)(*ref._bench_init).to(DEVICE, torch.float32)
    ref32.load_state_dict({k: v.float() for k, v in ref.state_dict().items()})
    inputs32 = [x.float() if x.is_floating_point() else x for x in inputs]
    with torch.no_grad():
        err = max_err(new(*inputs), ref32(*inputs32))
    for mode in ("fwd", "fwd+bwd"):
        for name, fn in impls.items():
            try:
                if mode == "fwd":
                    with torch.no_grad():
                        fn(*inputs)
                        us = bench(lambda fn=fn: fn(*inputs))
                else:
                    leaves = [x.detach().requires_grad_(True) if i in grad_idx else x for i, x in enumerate(inputs)]
                    params = [p for p in (ref.parameters() if name != "search" else new.parameters())]
                    grads_of = [leaves[i] for i in grad_idx] + params

                    def step(fn=fn, leaves=leaves):
                        out = fn(*leaves)
                        out = out if isinstance(out, tuple) else (out,)
                        torch.autograd.backward([o for o in out if o.requires_grad],
                                                [torch.ones_like(o) for o in out if o.requires_grad])
                    step()
                    us = bench(step, grad_to_none=grads_of)
            except Exception as exc:  # noqa: BLE001 - one failing implementation must not end the run
                rows.append(Row(op, shape, dname, mode, name, None, note=f"{type(exc).__name__}: {exc}"[:300]))
                traceback.print_exc(limit=2)
                continue
            row = Row(op, shape, dname, mode, name, round(us, 2), max_err=err if name == "search" else None)
            b = nbytes[0 if mode == "fwd" else 1] if nbytes else None
            if b:
                row.gbps = round(b / (us * 1e-6) / 1e9, 1)
                row.pct_copy = round(100 * row.gbps / copy_gbps, 1)
            f = flops[0 if mode == "fwd" else 1] if flops else None
            if f:
                row.tflops = round(f / (us * 1e-6) / 1e12, 1)
            rows.append(row)
            print(json.dumps(asdict(row)), flush=True)


def liger_ops():
    try:
        from liger_kernel.transformers import (
            LigerCrossEntropyLoss,
            LigerFusedLinearCrossEntropyLoss,
        )
    except Exception as exc:  # noqa: BLE001
        print(f"Liger-Kernel not available: {exc}", file=sys.stderr)
        return None
    ops = {"ce": LigerCrossEntropyLoss, "flce": LigerFusedLinearCrossEntropyLoss}
    try:
        from liger_kernel.transformers.fused_add_rms_norm import LigerFusedAddRMSNorm
        from liger_kernel.transformers.layer_norm import LigerLayerNorm
        ops["rms"], ops["ln"] = LigerFusedAddRMSNorm, LigerLayerNorm
    except Exception as exc:  # noqa: BLE001
        print(f"Liger-Kernel norms not available: {exc}", file=sys.stderr)
    return ops


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--quick", action="store_true", help="the anchor shapes only")
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="tiny float32 shapes on the CPU: checks the plumbing")
    args = parser.parse_args()
    global DEVICE
    DEVICE = "cpu" if args.smoke else "cuda"
    torch.backends.cuda.matmul.allow_tf32 = False
    rows: list[Row] = []
    t0 = time.time()
    copy_gbps = copy_bandwidth()
    print(f"copy bandwidth {copy_gbps:.0f} GB/s", flush=True)
    liger = liger_ops()
    comp = not args.no_compile and not args.smoke
    dev = DEVICE
    small = args.smoke

    def done():
        with open(args.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name() if dev == "cuda" else "cpu", "torch": torch.__version__,
                       "copy_gbps": round(copy_gbps, 1), "seconds": round(time.time() - t0, 1),
                       "rows": [asdict(r) for r in rows]}, f, indent=1)

    # ---- cross-entropy: the anchor (fp16 8192 x 32768), the Llama decoder's loss (bf16), a 128K vocabulary
    ce_shapes = [(8192, 32768, torch.float16), (8192, 32000, torch.bfloat16), (4096, 128256, torch.bfloat16)]
    if args.quick:
        ce_shapes = ce_shapes[:1]
    if small:
        ce_shapes = [(8, 96, torch.float32)]
    for m, v, dtype in ce_shapes:
        ref, new = models("losses/cross_entropy", "cross_entropy", [], dtype)
        ref._bench_init = []
        logits = torch.randn(m, v, device=dev, dtype=dtype) * 2
        targets = torch.randint(0, v, (m,), device=dev)
        elem = logits.element_size()
        lig = None
        if liger:
            lig = liger["ce"]()
        run_case(rows, "cross_entropy", f"{m}x{v}", dtype, ref, new, [logits, targets], [0],
                 (m * v * elem, 3 * m * v * elem), None, copy_gbps, lig, comp)
        done()
        del logits
    # ---- fused linear + cross-entropy at the Llama decoder's LM head (4 x 2048 tokens, 2048, 32000)
    for t, h, v, dtype in [(8192, 2048, 32000, torch.bfloat16)] if not small else [(8, 32, 96, torch.float32)]:
        ref, new = models("losses/fused_linear_cross_entropy", "linear_cross_entropy", [h, v], dtype)
        ref._bench_init = [h, v]
        hidden = torch.randn(t, h, device=dev, dtype=dtype)
        targets = torch.randint(0, v, (t,), device=dev)
        lig = None
        if liger:
            lig = functools.partial(liger["flce"](), ref.weight)  # Liger's argument order: (weight, x, target)
        run_case(rows, "linear_cross_entropy", f"{t}x{h}x{v}", dtype, ref, new, [hidden, targets], [0], None,
                 (2 * t * h * v, 6 * t * h * v), copy_gbps, lig, comp)
        done()
    # ---- residual add + RMSNorm / LayerNorm at the decoder's shapes (8192 tokens x 2048) and the anchor
    for task_id, op, lig_key in [("normalization/add_rmsnorm", "add_rmsnorm", "rms"),
                                 ("normalization/add_layernorm", "add_layernorm", "ln")]:
        shapes = [(8192, 2048, torch.bfloat16)]  # the decoder's residual stream (4 x 2048 tokens)
        for m, n, dtype in [(4, 96, torch.float32)] if small else shapes:
            ref, new = models(task_id, "norm", [n, 1e-6], dtype)
            ref._bench_init = [n, 1e-6]
            x = torch.randn(m, n, device=dev, dtype=dtype)
            r = torch.randn(m, n, device=dev, dtype=dtype)
            elem = x.element_size()
            lig = None
            if liger and lig_key == "rms":  # Liger's fused add + RMSNorm: (normed, sum)
                lig = liger["rms"](n, eps=1e-6).to(dev, dtype)
            elif liger and lig_key == "ln":  # Liger has no fused add + LayerNorm: its LayerNorm after the add
                norm = liger["ln"](n, eps=1e-6).to(dev, dtype)

                def lig(a, b, norm=norm):
                    s = a + b
                    return norm(s), s
            run_case(rows, op, f"{m}x{n}", dtype, ref, new, [x, r], [0, 1], (4 * m * n * elem, 8 * m * n * elem),
                     None, copy_gbps, lig, comp)
            done()
    # ---- embedding at the decoder's shapes (4 x 2048 ids, 32000 x 2048)
    for b, s, v, d, dtype in [(4, 2048, 32000, 2048, torch.bfloat16)] if not small else [(2, 5, 100, 24, torch.float32)]:
        ref, new = models("indexing/embedding", "embedding", [v, d], dtype)
        ref._bench_init = [v, d]
        ids = torch.randint(0, v, (b, s), device=dev)
        elem = ref.weight.element_size()
        run_case(rows, "embedding", f"{b}x{s} ids, {v}x{d}", dtype, ref, new, [ids], [],
                 (2 * b * s * d * elem + 8 * b * s, 2 * b * s * d * elem + v * d * elem * 2), None, copy_gbps, None,
                 comp)
        done()
    done()
    print(f"wrote {args.out} in {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
