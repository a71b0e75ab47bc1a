"""``kernellab optimize``: profile -> rank -> extract -> search -> install -> verify -> report."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from kernellab.optimize.extract import extract
from kernellab.optimize.model_source import load_model
from kernellab.optimize.profile import ModelProfile, profile_model, resolve_dtype
from kernellab.optimize.records import (
    PROFILE_FILE,
    VERIFY_FILE,
    OpRecord,
    write_json,
    write_ops,
)
from kernellab.optimize.search import search_ops
from kernellab.optimize.verify import VerifyResult, verify

log = logging.getLogger(__name__)

WIDER = frozenset({"add_rmsnorm", "add_layer_norm"})  # fusions with a narrower chain inside


@dataclass(frozen=True)
class OptimizeOptions:
    model: str
    inputs: str
    out: Path
    mode: str = "infer"
    dtype: str = "bf16"
    agent: str = "search"
    strategy: str = "keep-revert"
    budget: str = "30m"
    top: int = 8
    device: str | None = None
    seed: int = 0
    agent_options: tuple[tuple[str, str], ...] = ()
    strategy_options: tuple[tuple[str, str], ...] = (("patience", "3"),)
    # single ops ranked in the table but not extracted: vendor libraries (cuBLAS, cuDNN, flash
    # attention) already run them near their peak; pass () to extract them too
    skip_ops: tuple[str, ...] = ("linear", "matmul", "sdpa", "conv2d")
    compare_compile: bool = True  # time torch.compile and kernellab under torch.compile too
    sanitize: bool = True  # compute-sanitizer in each op's final verdict (GPU)

    def resolved_device(self) -> str:
        return self.device or ("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class OptimizeResult:
    profile: ModelProfile
    ops: list[OpRecord]
    verify: VerifyResult
    out: Path


def per_op_budget(budget: str, ops: int) -> str:
    """The whole budget's time split evenly between the ops to solve (iteration or $ parts kept as given)."""
    from kernellab.agents.base import Budget

    b = Budget.parse(budget)
    parts = [p for p in budget.split(",") if p.strip() and p.strip()[-1:] not in "smh"]
    seconds = getattr(b, "seconds", None) or getattr(b, "time_s", None)
    if seconds:
        parts.append(f"{max(int(seconds / max(ops, 1)), 10)}s")
    return ",".join(parts) or budget


def optimize(options: OptimizeOptions, progress: Callable[[str], None] | None = None) -> OptimizeResult:
    say = progress or (lambda _m: None)
    out = Path(options.out).expanduser().resolve()
    out.mkdir(parents=True, exist_ok=True)
    device = options.resolved_device()
    dtype = resolve_dtype(options.dtype)
    if options.mode not in ("infer", "train"):
        raise ValueError(f"--mode {options.mode!r}: infer or train")
    bundle = load_model(options.model, options.inputs, seed=options.seed)
    bundle.model.to(device=device, dtype=dtype)
    say(f"profiling {bundle.name} ({options.mode}, {options.dtype}, {bundle.sizes}) on {device}")
    profile = profile_model(bundle, mode=options.mode, dtype=dtype, device=device, seed=options.seed)
    ops = extract(profile.hotspots, out, top=options.top, mode=options.mode, skip_ops=options.skip_ops)
    if options.agent == "search":  # a wider fusion no template implements gives way to the narrower ones inside
        uncovered = frozenset(o.kind for o in ops if o.template is None and o.kind in WIDER)
        if uncovered:
            say(f"no template for {', '.join(sorted(uncovered))}: ranking their parts instead")
            shutil.rmtree(out / "tasks", ignore_errors=True)
            profile.rerank(uncovered)
            ops = extract(profile.hotspots, out, top=options.top, mode=options.mode, skip_ops=options.skip_ops)
    write_json(out / PROFILE_FILE, profile.to_dict())
    write_ops(out, ops)
    if device.startswith("cuda"):
        torch.cuda.empty_cache()  # the solves' sandbox children need the memory the profile cached
    solvable = [o for o in ops if options.agent != "search" or o.template]
    budget = per_op_budget(options.budget, len(solvable))
    say(f"{len(ops)} ops extracted, {len(solvable)} to solve, {budget} each")
    search_ops(ops, out, agent=options.agent, strategy=options.strategy, budget=budget, device=device,
               agent_options=dict(options.agent_options), strategy_options=dict(options.strategy_options),
               seed=options.seed, progress=say, sanitize=options.sanitize)
    write_ops(out, ops)
    say("verifying the optimized model end to end")
    result = verify(bundle, ops, out, mode=options.mode, dtype=dtype, device=device, seed=options.seed, progress=say,
                    with_compile=options.compare_compile)
    write_json(out / VERIFY_FILE, result.to_dict())
    from kernellab.report.optimize_report import write_optimize_report

    write_optimize_report(out)
    return OptimizeResult(profile, ops, result, out)


def summary_lines(result: OptimizeResult) -> list[str]:
    p, v = result.profile, result.verify
    lines = [(f"profile: {len(p.hotspots)} ops/chains, attribution {100 * p.call.coverage:.1f}% of "
             f"{p.call.total_us / 1e3:.3f} ms per call")]
    for o in result.ops:
        state = "installed" if o.installed else (o.verdict or o.solve_note or o.solve_status or "-")
        lines.append(f"  {o.slug:28s} {100 * o.share:5.1f}%  template={o.template or '-':12s} "
                     f"solve={o.solve_status or '-':14s} {state}")
    lines.append(f"end to end: {'passed' if v.passed else 'FAILED'}; " +
                 ", ".join(f"{k} {t:.3f} ms" for k, t in v.timings_ms.items() if t) + (f"; {v.note}" if v.note else ""))
    return lines


