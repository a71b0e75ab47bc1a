"""Where the search agent's template kernels stand against the alternatives and the device's limits.

    python benchmarks/roofline.py                          # H100: anchors + every served suite task
    python benchmarks/roofline.py --tasks positional/rope_qk,gated_mlp/swiglu_concat --dtypes bfloat16
    python benchmarks/roofline.py --dry-run                # any machine: the rows it would time

Rows: the anchor shapes of ANCHORS.md (RMSNorm 8192², softmax 8192², cross-entropy 8192×32768, row sum
16384×4096, matmul 4096³; fp16 and bf16) and every suite task a template serves (by default its
largest seen config in bf16; ``--configs seen`` for all three). Each row times, with
``triton.testing.do_bench`` (median, L2 flushed between calls):

- ``eager``: the task's reference module;
- ``compile``: ``torch.compile`` of it;
- ``liger``: Liger-Kernel's kernel for the op where it has one (RMSNorm, LayerNorm, SwiGLU, GeGLU,
  Hugging Face-layout RoPE, cross-entropy), given the same tensors;
- ``search``: the template kernel the search agent proposes first (its defaults; ``--presets`` takes
  the fastest of the defaults and the template's presets, as the agent's screening does on a GPU),
  checked against eager before it is timed.

Tasks with backward are timed forward + backward (the gradients the task asks for). Each time comes
with GB/s and TFLOP/s from the task's byte/FLOP counts (``evaluate.roofline``: task formulas, else
inputs + outputs and the FLOP counter; forward + backward counts 3×) and % of the measured ceiling
(``evaluate.ceilings``: copy bandwidth and matmul peak of this device). The JSON (default
``docs/results/roofline.json``) is rewritten after every row, so a run cut short keeps what it measured.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from kernellab.evaluate.roofline import roofline, task_bytes, task_flops
from kernellab.kernels import Match, match_templates
from kernellab.sandbox.candidate_module import load_candidate
from kernellab.tasks.load import SUITE_ROOT, load_task
from kernellab.tasks.materialize import (
    TORCH_DTYPES,
    build_model,
    cast_model,
    copy_matching_state,
    flatten_outputs,
    load_problem,
    module_inputs,
)
from kernellab.tasks.model import Config, Task, Visibility

ANCHORS = [  # (label, task, config): ANCHORS.md's shapes
    ("RMSNorm 8192x8192", "normalization/rmsnorm", {"num_tokens": 8192, "hidden": 8192}),
    ("softmax 8192x8192", "softmax/softmax", {"rows": 8192, "cols": 8192}),
    ("cross-entropy 8192x32768", "losses/cross_entropy", {"num_tokens": 8192, "vocab_size": 32768}),
    ("row sum 16384x4096", "reductions/sum_rows", {"rows": 16384, "cols": 4096}),
    ("matmul 4096^3", "matmul/matmul_nt", {"M": 4096, "N": 4096, "K": 4096}),
]
IMPLS = ("eager", "compile", "liger", "search")


@dataclass
class Plan:
    label: str
    task_id: str
    config: dict[str, Any]
    dtype: str
    template: str | None
    anchor: bool
    backward: bool


@dataclass
class Result:
    us: float | None = None
    gbps: float | None = None
    tflops: float | None = None
    pct_of_roofline: float | None = None
    note: str = ""


@dataclass
class Row:
    plan: Plan
    phase: str
    results: dict[str, Result] = field(default_factory=dict)
    bound: str | None = None
    search_kernel: str = ""


# ------------------------------------------------------------------------------------ planning


def served_tasks() -> list[tuple[Task, Match]]:
    found = []
    for folder in sorted(p.parent for p in SUITE_ROOT.glob("*/*/reference.py")):
        task = load_task(folder)
        matches = match_templates(task)
        if matches:
            found.append((task, matches[0]))
    return found


def plan_rows(args: argparse.Namespace) -> list[Plan]:
    plans: list[Plan] = []
    wanted = set(args.tasks.split(",")) if args.tasks else None
    if not args.no_anchors and wanted is None and not args.cpu_smoke:
        for label, task_id, config in ANCHORS:
            task = load_task(task_id)
            matches = match_templates(task)
            for dtype in ("float16", "bfloat16"):  # ANCHORS.md's numbers are forward times
                plans.append(Plan(label, task_id, config, dtype, matches[0].template.name if matches else None,
                                  True, False))
    for task, match in served_tasks():
        if wanted is not None and task.id not in wanted:
            continue
        seen = [c.as_dict() for c in task.configs_of(Visibility.SEEN)]
        configs = seen if args.configs == "seen" else seen[-1:]
        if args.cpu_smoke:
            configs = [c.as_dict() for c in task.configs_of(Visibility.SMALL)][:1]
        dtypes = [d for d in args.dtypes.split(",") if d in task.dtypes] or [task.dtypes[0]]
        for config in configs:
            for dtype in dtypes:
                label = f"{task.id} " + ",".join(f"{k}={v}" for k, v in config.items())
                plans.append(Plan(label, task.id, config, dtype, match.template.name, False,
                                  task.backward and not args.forward_only))
    return plans


# ------------------------------------------------------------------------------------ building


def _load_candidate(match: Match, params: dict[str, int], folder: Path, name: str) -> type:
    """The candidate's ``ModelNew``, rendered into ``folder`` and imported as the harness imports it."""
    path = folder / f"{name}.py"
    path.write_text(match.render(params))
    return load_candidate(str(path), name)[1]


def _instances(task: Task, plan: Plan, device: str):
    problem = load_problem(task, Config.of(plan.config, Visibility.SEEN))
    init = problem.init_inputs()
    model = cast_model(build_model(problem.module.Model, init, 0), plan.dtype, task.keep_dtype, device)
    inputs = module_inputs(problem.module, 0, device, plan.dtype, task.keep_dtype)
    return problem, init, model, inputs


def _call(fn, inputs: list[Any], task: Task, names: list[str], backward: bool, grads: list[Any] | None):
    """A closure timing one forward (or forward + backward) of ``fn``."""
    if not backward:
        def forward():
            with torch.no_grad():
                return fn(*inputs)
        return forward
    leaves = [x.detach().requires_grad_(n in task.grad_inputs) if torch.is_tensor(x) and x.is_floating_point()
              else x for x, n in zip(inputs, names)]

    def step():
        outs = [o for o in flatten_outputs(fn(*leaves)) if torch.is_tensor(o) and o.requires_grad]
        torch.autograd.backward(outs, grads[:len(outs)])
    return step


def _time_us(fn) -> float:
    if not torch.cuda.is_available():  # --cpu-smoke: one call under the interpreter, plumbing only
        start = time.perf_counter()
        fn()
        return (time.perf_counter() - start) * 1e6
    import triton.testing

    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e3


def _liger(plan: Plan, match: Match | None, model: torch.nn.Module, names: list[str]):
    """Liger-Kernel's function for this op over the task's inputs, or a reason it has none."""
    try:
        import liger_kernel.transformers.functional as lf
    except ImportError:
        return None, "liger_kernel not installed"
    template = match.template.name if match else None
    if template == "norm" and plan.task_id.startswith("normalization/rmsnorm"):
        w = model.weight
        offset = 1.0 if plan.task_id.endswith("gemma") else 0.0
        mode = "gemma" if offset else "llama"
        eps = float(getattr(model, "eps", 1e-6))
        return (lambda x: lf.liger_rms_norm(x, w, eps, offset, mode, False)), ""
    if template == "norm" and plan.task_id.startswith("normalization/layernorm") and hasattr(model, "bias"):
        return (lambda x: lf.liger_layer_norm(x, model.weight, model.bias, float(getattr(model, "eps", 1e-5)))), ""
    if template in ("gated", "elementwise") and plan.task_id.startswith("gated_mlp/"):
        op = {"swiglu": lf.liger_swiglu, "geglu_tanh": lf.liger_geglu}.get(
            "swiglu" if "swiglu" in plan.task_id else "geglu_tanh" if "geglu_tanh" in plan.task_id else "")
        if op is None or "backward" in plan.task_id or "clamped" in plan.task_id or "bias" in plan.task_id:
            return None, "no Liger kernel for this gated variant"
        if names == ["gate", "up"]:
            return op, ""
        return (lambda x: op(*x.chunk(2, dim=-1))), ""
    if template == "rope" and plan.task_id == "positional/rope_hf_qk":
        return (lambda q, k, cos, sin: lf.liger_rope(q, k, cos, sin)), ""
    if plan.task_id == "losses/cross_entropy":
        return (lambda logits, target: lf.liger_cross_entropy(logits, target)), ""
    return None, "Liger has no kernel for this op"


# ------------------------------------------------------------------------------------ timing


def run_row(plan: Plan, device: str, ceilings, folder: Path, presets: bool, compile_: bool = True) -> Row:
    task = load_task(plan.task_id)
    row = Row(plan, "forward+backward" if plan.backward else "forward")
    problem, init, model, inputs = _instances(task, plan, device)
    names = problem.input_names
    with torch.no_grad():
        expected = flatten_outputs(model(*inputs))
    # incoming gradients from a generator of their own: drawn from the global RNG right after the inputs'
    # seeding, they equalled the first input (and F.normalize's gradient along its input is zero)
    gen = torch.Generator(device=device).manual_seed(12345)
    grads = [torch.randn(o.shape, generator=gen, device=o.device).to(o.dtype) for o in expected
             if torch.is_tensor(o) and o.is_floating_point()] if plan.backward else None
    constants = {**{k: v for k, v in vars(problem.module).items() if isinstance(v, (int, float))}, **plan.config}
    elem = torch.empty(0, dtype=TORCH_DTYPES[plan.dtype]).element_size()
    moved = task_bytes(task.bytes_formula, constants, elem, inputs, expected)
    flops = task_flops(task.flops_formula, constants, elem, model, inputs)
    if plan.backward:
        moved, flops = moved * 3, flops * 3

    def record(name: str, fn) -> None:
        try:
            us = _time_us(_call(fn, inputs, task, names, plan.backward, grads))
        except Exception as exc:  # noqa: BLE001 - one implementation failing leaves the others' numbers
            row.results[name] = Result(note=f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
            return
        point = roofline(moved, flops, us, ceilings, plan.dtype, task.fp32_precision)
        row.results[name] = Result(us, point.achieved_gbps, point.achieved_tflops, point.pct_of_roofline)
        row.bound = point.bound

    record("eager", model)
    if compile_:
        record("compile", torch.compile(model))
    else:
        row.results["compile"] = Result(note="not timed (--cpu-smoke)")
    match = next(iter(match_templates(task)), None)
    liger, why = _liger(plan, match, model, names)
    if liger is None:
        row.results["liger"] = Result(note=why)
    else:
        record("liger", liger)
    if match is None:
        row.results["search"] = Result(note="no template serves this task")
        return row
    best: tuple[float, str] | None = None
    for i, params in enumerate(match.presets() if presets else [{}]):
        model_new = _load_candidate(match, params, folder, f"cand_{abs(hash(plan.label)) % 10**8}_{i}")
        candidate = cast_model(build_model(model_new, init, 0), plan.dtype, task.keep_dtype, device)
        copy_matching_state(model.state_dict(), candidate)
        with torch.no_grad():
            got = flatten_outputs(candidate(*inputs))
        bad = _mismatch(got, expected, plan.dtype)
        if not bad and plan.backward:
            bad = _grad_mismatch(model, candidate, inputs, names, task, grads, plan.dtype)
        if bad:
            row.results.setdefault("search", Result(note=f"preset {i}: {bad}"))
            continue
        record(f"search#{i}", candidate)
        result = row.results.pop(f"search#{i}")
        if result.us is not None and (best is None or result.us < best[0]):
            best = (result.us, f"{match.template.name} preset {i} {params or 'defaults'}")
            row.results["search"] = result
    if best is not None:
        row.search_kernel = best[1]
    return row


def _grads(model: torch.nn.Module, inputs: list[Any], names: list[str], task: Task, grads: list[Any]) -> list[Any]:
    leaves = [x.detach().requires_grad_(n in task.grad_inputs) if torch.is_tensor(x) and x.is_floating_point()
              else x for x, n in zip(inputs, names)]
    model.zero_grad(set_to_none=True)
    outs = [o for o in flatten_outputs(model(*leaves)) if torch.is_tensor(o) and o.requires_grad]
    torch.autograd.backward(outs, grads[:len(outs)])
    found = [x.grad for x, n in zip(leaves, names) if n in task.grad_inputs]
    return found + [p.grad for _, p in sorted(model.named_parameters()) if p.grad is not None]


def _grad_mismatch(model, candidate, inputs, names, task, grads, dtype: str) -> str:
    """The candidate's gradients (inputs the task names, then parameters) against eager's."""
    bad = _mismatch(_grads(candidate, inputs, names, task, grads), _grads(model, inputs, names, task, grads), dtype)
    return f"backward: {bad}" if bad else ""


def _mismatch(got: list[Any], expected: list[Any], dtype: str) -> str:
    tol = {"float32": 1e-3, "bfloat16": 3e-2, "float16": 1e-2}.get(dtype, 1e-3)
    if len(got) != len(expected):
        return f"{len(got)} outputs, expected {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected)):
        if not torch.is_tensor(e):
            continue
        if g.shape != e.shape:
            return f"output {i}: shape {tuple(g.shape)}, expected {tuple(e.shape)}"
        scale = e.float().abs().max().item() or 1.0
        err = (g.float() - e.float()).abs().max().item() / scale
        if not err <= tol:
            return f"output {i}: max error {err:.2e} of the output's range"
    return ""


# ------------------------------------------------------------------------------------ output


def _fmt(r: Result | None) -> str:
    if r is None or r.us is None:
        return "—"
    rate = f"{r.tflops:.0f} TF/s" if r.tflops and r.tflops > 1 else f"{r.gbps:.0f} GB/s"
    pct = f" {r.pct_of_roofline:.0f}%" if r.pct_of_roofline is not None else ""
    return f"{r.us:.1f} µs {rate}{pct}"


def print_row(row: Row) -> None:
    p = row.plan
    cells = " | ".join(_fmt(row.results.get(i)) for i in IMPLS)
    print(f"| {p.label} | {p.dtype} | {row.phase} | {cells} |", flush=True)


def summary(rows: list[Row]) -> dict[str, Any]:
    """Geometric-mean speedup of search over compile and eager, per category and overall."""
    by: dict[str, list[tuple[float, float]]] = {}
    for row in rows:
        s, c, e = (row.results.get(k) for k in ("search", "compile", "eager"))
        if s and s.us and c and c.us and e and e.us and not row.plan.anchor:
            by.setdefault(row.plan.task_id.split("/")[0], []).append((c.us / s.us, e.us / s.us))
    out = {}
    for cat, pairs in sorted(by.items()) + [("all", [p for v in by.values() for p in v])]:
        if pairs:
            out[cat] = {"rows": len(pairs),
                        "vs_compile": math.exp(sum(math.log(a) for a, _ in pairs) / len(pairs)),
                        "vs_eager": math.exp(sum(math.log(b) for _, b in pairs) / len(pairs))}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", help="comma-separated suite ids (default: every served task, and the anchors)")
    parser.add_argument("--dtypes", default="bfloat16", help="dtypes of the suite rows (anchors: fp16 and bf16)")
    parser.add_argument("--configs", choices=("largest", "seen"), default="largest")
    parser.add_argument("--presets", action="store_true", help="search: the fastest of defaults and presets")
    parser.add_argument("--forward-only", action="store_true", help="time forward only, also for backward tasks")
    parser.add_argument("--no-anchors", action="store_true")
    parser.add_argument("--total-time", type=float, default=1500.0, help="stop starting rows after this many s")
    parser.add_argument("--out", type=Path, default=Path("docs/results/roofline.json"))
    parser.add_argument("--dry-run", action="store_true", help="list the rows and exit (no GPU needed)")
    parser.add_argument("--cpu-smoke", action="store_true",
                        help="the served tasks' small configs on the CPU under the Triton interpreter, one call "
                             "each, no torch.compile: the plumbing, not the speed")
    args = parser.parse_args(argv)
    try:
        plans = plan_rows(args)
    except Exception as exc:  # noqa: BLE001 - bad input: one line
        print(f"roofline: {exc}", file=sys.stderr)
        return 2
    if args.dry_run:
        for p in plans:
            phase = "forward+backward" if p.backward else "forward"
            print(f"{'anchor ' if p.anchor else ''}{p.label} | {p.dtype} | {phase} | template "
                  f"{p.template or '—'}")
        print(f"{len(plans)} rows, {len({p.task_id for p in plans})} tasks")
        return 0
    if args.cpu_smoke:
        os.environ["TRITON_INTERPRET"] = "1"
        device, ceilings, device_name = "cpu", None, "cpu (Triton interpreter)"
    elif not torch.cuda.is_available():
        print("roofline: needs a CUDA device (--dry-run lists the rows, --cpu-smoke runs the plumbing)",
              file=sys.stderr)
        return 2
    else:
        from kernellab.evaluate.ceilings import load_ceilings, measure_ceilings

        device = "cuda"
        ceilings = load_ceilings(torch.device(device)) or measure_ceilings(torch.device(device))
        device_name = ceilings.device_name
        print(f"ceilings: copy {ceilings.copy_gbps:.0f} GB/s, bf16 {ceilings.bf16_tflops:.0f} TFLOP/s "
              f"({device_name})", flush=True)
    print("| row | dtype | phase | " + " | ".join(IMPLS) + " |\n|---|---|---|" + "---|" * len(IMPLS))
    rows: list[Row] = []
    start = time.monotonic()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for plan in plans:
            if time.monotonic() - start > args.total_time:
                print(f"stopped: --total-time {args.total_time:.0f} s reached", flush=True)
                break
            try:
                row = run_row(plan, device, ceilings, Path(tmp), args.presets, not args.cpu_smoke)
            except Exception as exc:  # noqa: BLE001 - a task that cannot be built here: say so, go on
                row = Row(plan, "forward", {"eager": Result(note=f"{type(exc).__name__}: {exc}"[:200])})
            rows.append(row)
            print_row(row)
            torch._dynamo.reset()
            args.out.write_text(json.dumps({"device": device_name, "ceilings": ceilings and ceilings.to_dict(),
                                            "torch": torch.__version__, "rows": [asdict(r) for r in rows],
                                            "summary": summary(rows)}, indent=1))
    for cat, s in summary(rows).items():
        print(f"{cat}: search {s['vs_compile']:.2f}x torch.compile, {s['vs_eager']:.2f}x eager over {s['rows']} rows")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
