"""Eager, torch.compile, Liger-Kernel and kernellab on the same model, inference and training.

    PYTHONPATH=src python benchmarks/optimize_side_by_side.py --kernels runs/opt-llama --out results.json

The model is the Llama-style preset (transformers config, random weights, bf16). ``--kernels`` is a
``kernellab optimize`` folder (its verified kernels are installed with ``kernellab.apply``). Liger is
``apply_liger_kernel_to_llama`` where ``liger_kernel`` imports (install it from its wheel). Median of
CUDA-event-timed steps; peak memory per variant. Prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics

import torch


def build(preset: str, liger: bool):
    if liger:
        from liger_kernel.transformers import apply_liger_kernel_to_llama

        apply_liger_kernel_to_llama()  # patches the transformers classes before the model is built
    from kernellab.optimize.model_source import load_model

    return load_model(preset, "1x1")


def timed(step, steps: int = 10, warmup: int = 3) -> tuple[float, int]:
    for _ in range(warmup):
        step()
    if not torch.cuda.is_available():  # plumbing only: wall-clock on the CPU
        import time

        times = []
        for _ in range(steps):
            began = time.perf_counter()
            step()
            times.append((time.perf_counter() - began) * 1e3)
        return statistics.median(times), 0
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(steps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        step()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times), torch.cuda.max_memory_allocated()


def measure(args, variant: str, mode: str, shape: str, dtype: torch.dtype) -> dict:
    """One row: the model built afresh (Liger patches it at build time), the variant applied, timed."""
    import kernellab

    row = {"mode": mode, "shape": shape, "variant": variant}
    torch._dynamo.reset()
    try:
        bundle = build(args.preset, liger=variant == "liger")
    except ImportError as exc:
        return {**row, "error": str(exc)}
    b, s = (int(v) for v in shape.split("x"))
    model = bundle.model.to(args.device, dtype).train(mode == "train")
    fn = bundle.loss if mode == "train" else bundle.forward

    def call(*x):
        return fn(model, *x)

    if variant == "compile":
        call = torch.compile(call)
    elif variant.startswith("kernellab"):
        call = kernellab.apply(_Wrap(call), args.kernels, compile=variant.endswith("compile"))
    inputs = bundle.inputs({"B": b, "S": s}, args.device, dtype, seed=1)

    def step():
        if mode == "train":
            call(*inputs).backward()
            model.zero_grad(set_to_none=True)
        else:
            with torch.no_grad():
                call(*inputs)

    try:
        ms, mem = timed(step)
        row.update(ms=ms, peak_gib=mem / 2**30)
    except Exception as exc:  # noqa: BLE001 - a variant that cannot run is a row with its error
        row["error"] = f"{type(exc).__name__}: {exc}"
    if torch.cuda.is_available():
        del model, bundle, call
        torch.cuda.empty_cache()
    return row


def run(args) -> list[dict]:
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    variants = [v for v in args.variants.split(",") if v]
    variants.sort(key=lambda v: v == "liger")  # Liger patches transformers for the rest of the process
    return [measure(args, variant, mode, shape, dtype) for variant in variants
            for mode in args.modes.split(",") for shape in args.shapes.split(",")]


class _Wrap(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *a):
        return self.fn(*a)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--preset", default="llama")
    p.add_argument("--kernels", required=True, help="a kernellab optimize folder")
    p.add_argument("--modes", default="infer,train")
    p.add_argument("--shapes", default="4x2048,32x512")
    p.add_argument("--out", default="optimize_side_by_side.json")
    p.add_argument("--device", default="cuda")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--variants", default="eager,compile,kernellab,kernellab+compile,liger")
    args = p.parse_args()
    rows = run(args)
    base = {(r["mode"], r["shape"]): r.get("ms") for r in rows if r["variant"] == "eager"}
    for r in rows:
        e = base.get((r["mode"], r["shape"]))
        r["vs_eager"] = e / r["ms"] if r.get("ms") and e else None
        print(f"{r['mode']:6s} {r['shape']:8s} {r['variant']:18s} "
              + (f"{r['ms']:8.2f} ms  x{r['vs_eager'] or 0:.2f}  {r['peak_gib']:.2f} GiB" if r.get("ms")
                 else r.get("error", "")))
    with open(args.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
