"""The end-to-end check of an optimized model against the original.

1. Outputs (and in ``train`` mode the loss and every parameter's gradient) of the model with the
   kernels installed vs the original, on fresh inputs at the profiled sizes and at batch/sequence
   sizes no kernel saw, with a per-dtype tolerance on the normalised error. When the whole fails,
   each kernel is checked alone and those that break the model are uninstalled, with the reason.
2. On a GPU: the step's time (CUDA events, median) for eager, eager with the kernels, torch.compile,
   and torch.compile with the kernels, and peak memory of each; a kernel whose removal makes the
   model faster is uninstalled as a regression. The Amdahl projection from the kept kernels' own
   speedups is reported beside the measurement.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kernellab.optimize.amdahl import projected
from kernellab.optimize.install import apply
from kernellab.optimize.model_source import ModelBundle
from kernellab.optimize.profile import model_call
from kernellab.optimize.records import OpRecord, write_ops

log = logging.getLogger(__name__)

# Normalised error (max |a - b| / max |b|) allowed end to end, per dtype: a whole model accumulates
# the rounding of every layer, so these are looser than a single op's tolerance.
TOLERANCE = {"float32": 1e-3, "float16": 1e-2, "bfloat16": 4e-2}
# 16-bit dtypes: error vs a float32 copy of the model at most FACTOR x the original's, or FLOOR
FACTOR = 4.0
FLOOR = {"float16": 2e-3, "bfloat16": 1e-2}
REGRESSION_MARGIN = 0.01  # a kernel is uninstalled when the model is >1% faster without it


@dataclass
class CheckResult:
    sizes: dict[str, int]
    seen: bool
    worst_error: float
    tolerance: float
    worst_where: str

    @property
    def passed(self) -> bool:
        return self.worst_error <= self.tolerance

    def to_dict(self) -> dict[str, Any]:
        return {"sizes": self.sizes, "seen": self.seen, "worst_error": self.worst_error, "tolerance": self.tolerance,
                "where": self.worst_where, "passed": self.passed}


@dataclass
class VerifyResult:
    mode: str
    dtype: str
    device: str
    checks: list[CheckResult] = field(default_factory=list)
    timings_ms: dict[str, float | None] = field(default_factory=dict)
    peak_mem_bytes: dict[str, int | None] = field(default_factory=dict)
    projected_speedup: float | None = None
    uninstalled: dict[str, str] = field(default_factory=dict)
    rewrites: dict[str, dict[str, int]] = field(default_factory=dict)
    note: str = ""

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def speedup(self, variant: str, base: str) -> float | None:
        a, b = self.timings_ms.get(variant), self.timings_ms.get(base)
        return b / a if a and b else None

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "dtype": self.dtype, "device": self.device, "passed": self.passed,
                "checks": [c.to_dict() for c in self.checks], "timings_ms": self.timings_ms,
                "peak_mem_bytes": self.peak_mem_bytes,
                "speedup": {"kernellab_vs_eager": self.speedup("kernellab", "eager"),
                            "compile_vs_eager": self.speedup("compile", "eager"),
                            "kernellab_compile_vs_compile": self.speedup("kernellab_compile", "compile"),
                            "kernellab_compile_vs_eager": self.speedup("kernellab_compile", "eager")},
                "projected_speedup": self.projected_speedup, "uninstalled": self.uninstalled,
                "rewrites": self.rewrites, "note": self.note}


def _norm_err(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach().double(), b.detach().double()
    if a.shape != b.shape:
        return math.inf
    if not torch.isfinite(a).all() or not torch.isfinite(b).all():
        return math.inf if not torch.equal(torch.isfinite(a), torch.isfinite(b)) else 0.0
    scale = b.abs().max().item() or 1.0
    return (a - b).abs().max().item() / scale


def _results(model: torch.nn.Module, fn: Callable[..., Any], inputs: tuple, mode: str) -> dict[str, torch.Tensor]:
    """What is compared: the output (infer), or the loss and every parameter's gradient (train)."""
    if mode == "train":
        model.zero_grad(set_to_none=True)
        loss = fn(*inputs)
        loss.backward()
        out = {"loss": loss.detach().float().reshape(1)}
        out.update({f"grad {n}": p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None})
        model.zero_grad(set_to_none=True)
        return out
    with torch.no_grad():
        return {"output": fn(*inputs).detach().clone()}


def _cast(inputs: tuple, dtype: torch.dtype) -> tuple:
    return tuple(t.to(dtype) if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in inputs)


def check_outputs(bundle: ModelBundle, out: Path, mode: str, dtype: torch.dtype, device: str,
                  only: list[str] | None, seed: int, rewrites: dict | None = None) -> list[CheckResult]:
    """Original vs optimized at the profiled sizes and unseen ones; ``rewrites`` (if given) receives,
    per kernel, how many chains it replaced and how often it ran or fell back.

    In float32 the optimized model must match the original within ``TOLERANCE``. In a 16-bit dtype
    both are compared with a float32 copy of the model, as the verifier does per op: the optimized
    model's error may be at most ``FACTOR`` times the original's own (its rounding), and never needs
    to be below ``FLOOR`` (so a model whose 16-bit rounding is tiny is not held to zero)."""
    name = str(dtype).replace("torch.", "")
    eager = model_call(bundle, mode)
    torch._dynamo.reset()  # Dynamo reuses code compiled for an earlier backend; each check installs anew
    optimized = apply(_Call(eager), out, only=only)
    wide = None
    if dtype != torch.float32:
        wide = copy.deepcopy(bundle.model).float()
        wide_fn = model_call(dataclasses.replace(bundle, model=wide), mode)
    results = []
    for i, (sizes, seen) in enumerate([(bundle.sizes, True)] + [(s, False) for s in bundle.perturbed_sizes()]):
        inputs32 = bundle.inputs(sizes, device, torch.float32, seed=seed + 1000 + i)  # fresh values
        inputs = _cast(inputs32, dtype)
        ref = _results(bundle.model, eager, inputs, mode)
        got = _results(bundle.model, optimized, inputs, mode)
        truth = _results(wide, wide_fn, inputs32, mode) if wide is not None else None
        worst, worst_tol, where, ratio = 0.0, TOLERANCE.get(name, 1e-3), "", -1.0
        for key, value in ref.items():
            if truth is None:
                err, tol = (_norm_err(got[key], value) if key in got else math.inf), TOLERANCE.get(name, 1e-3)
            else:
                base = _norm_err(value, truth[key])
                err = _norm_err(got[key], truth[key]) if key in got else math.inf
                tol = max(FLOOR.get(name, 1e-3), FACTOR * base)
            if err / tol > ratio:
                worst, worst_tol, where, ratio = err, tol, key, err / tol
        results.append(CheckResult(dict(sizes), seen, worst, worst_tol, where))
    if rewrites is not None:
        for k in optimized.kernellab_installer.kernels:
            rewrites[k.record.slug] = {"chains_replaced": k.rewrites, "kernel_calls": k.kernel_calls,
                                       "fallback_calls": k.fallback_calls}
    del wide
    return results


class _Call(torch.nn.Module):
    """A plain callable as a module, so ``apply`` can compile it."""

    def __init__(self, fn: Callable[..., Any]):
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any) -> Any:
        return self.fn(*args)


def _time(fn: Callable[[], Any], device: str, steps: int = 10, warmup: int = 3) -> tuple[float, int | None]:
    for _ in range(warmup):
        fn()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        times = []
        for _ in range(steps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        return statistics.median(times), torch.cuda.max_memory_allocated()
    times = []
    for _ in range(steps):
        began = time.perf_counter()
        fn()
        times.append((time.perf_counter() - began) * 1e3)
    return statistics.median(times), None


def time_variants(bundle: ModelBundle, out: Path, mode: str, dtype: torch.dtype, device: str,
                  only: list[str] | None, seed: int, with_compile: bool = True) -> tuple[dict, dict]:
    eager = model_call(bundle, mode)
    inputs = bundle.inputs(device=device, dtype=dtype, seed=seed + 7)
    torch._dynamo.reset()
    variants: dict[str, Callable[..., Any]] = {"eager": eager, "kernellab": apply(_Call(eager), out, only=only)}
    if with_compile:
        torch._dynamo.reset()
        variants["compile"] = torch.compile(eager)
        variants["kernellab_compile"] = apply(_Call(eager), out, only=only, compile=True)
    times, mem = {}, {}
    for name, fn in variants.items():
        def step(fn: Callable[..., Any] = fn) -> None:
            if mode == "train":
                fn(*inputs).backward()
                bundle.model.zero_grad(set_to_none=True)
            else:
                with torch.no_grad():
                    fn(*inputs)
        try:
            times[name], mem[name] = _time(step, device)
        except Exception as exc:  # noqa: BLE001 - a variant that cannot run is reported, not fatal
            log.warning("timing %s failed: %s", name, exc)
            times[name], mem[name] = None, None
    return times, mem


def verify(bundle: ModelBundle, ops: list[OpRecord], out: Path, *, mode: str, dtype: torch.dtype, device: str,
           seed: int = 0, progress: Callable[[str], None] | None = None, with_compile: bool = True) -> VerifyResult:
    name = str(dtype).replace("torch.", "")
    result = VerifyResult(mode, name, device)
    candidates = [o for o in ops if o.installed_candidate]
    if not candidates:
        result.note = "no verified kernel to install"
        return result
    bundle.model.train(mode == "train")
    slugs = [o.slug for o in candidates]
    checks = check_outputs(bundle, out, mode, dtype, device, slugs, seed, rewrites=result.rewrites)
    if not all(c.passed for c in checks):  # find the kernels that break the model, alone
        for op in candidates:
            alone = check_outputs(bundle, out, mode, dtype, device, [op.slug], seed)
            bad = next((c for c in alone if not c.passed), None)
            if bad is not None:
                op.uninstalled = True
                op.verdict = (f"uninstalled: breaks the model's {bad.worst_where} at {bad.sizes} "
                              f"(normalised error {bad.worst_error:.3g} > {bad.tolerance:g})")
                result.uninstalled[op.slug] = op.verdict
        candidates = [o for o in candidates if not o.uninstalled]
        write_ops(out, ops)
        slugs = [o.slug for o in candidates]
        result.rewrites.clear()
        checks = check_outputs(bundle, out, mode, dtype, device, slugs, seed, rewrites=result.rewrites) \
            if slugs else checks
    result.checks = checks
    if device.startswith("cuda") and slugs:
        if progress:
            progress("timing eager, kernellab, torch.compile and both together")
        times, mem = time_variants(bundle, out, mode, dtype, device, slugs, seed, with_compile)
        # regressions: is the model faster without a kernel? Each one is taken out in turn when the
        # whole is not faster than eager (some kernel costs more than it gives) or there are few
        ablate = len(candidates) <= 3 or not (times.get("kernellab") and times.get("eager")
                                               and times["kernellab"] < times["eager"])
        for op in list(candidates) if ablate else []:
            others = [s for s in slugs if s != op.slug]
            t_without, _ = time_variants(bundle, out, mode, dtype, device, others, seed, with_compile=False) \
                if others else ({"kernellab": times["eager"]}, {})
            if t_without["kernellab"] and times["kernellab"] and \
                    t_without["kernellab"] < times["kernellab"] * (1 - REGRESSION_MARGIN):
                op.uninstalled = True
                op.verdict = (f"uninstalled: the model is faster without it ({t_without['kernellab']:.3f} ms vs "
                              f"{times['kernellab']:.3f} ms)")
                result.uninstalled[op.slug] = op.verdict
                slugs = others
                times, mem = time_variants(bundle, out, mode, dtype, device, slugs, seed, with_compile)
        result.timings_ms, result.peak_mem_bytes = times, mem
    else:
        result.note = "timings need a GPU (under the Triton interpreter kernels run as Python): correctness only"
    kept = [o for o in ops if o.installed_candidate]
    for o in kept:
        o.installed = True
        o.verdict = o.verdict or "installed: outputs within tolerance" + (
            "" if not device.startswith("cuda") else " and the model is not faster without it")
    factors = [(o.share, o.op_speedup.get("vs_eager")) for o in kept if o.op_speedup.get("vs_eager")]
    result.projected_speedup = projected(factors) if factors else None
    write_ops(out, ops)
    return result
