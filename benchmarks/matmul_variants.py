"""The matmul template's variants against cuBLAS: the persistent TMA-descriptor kernel (tile shapes,
warp specialisation), the pointer kernel, and float32 as IEEE FMA or three TF32 products (tf32x3).

    python benchmarks/matmul_variants.py --out matmul_variants.json     # H100, about a minute

Rows: ``matmul/matmul_nt`` (C = A·Bᵀ) at 4096³ in bf16 and fp16 for each variant, the largest seen config
of every ``matmul/`` task the template serves (template defaults vs the eager reference, cuBLAS), and
4096³ float32 (cuBLAS with TF32 off vs the FMA kernel vs tf32x3, each with its max error against a
float64 product). ``triton.testing.do_bench`` medians, L2 flushed. Every kernel's output is checked
against cuBLAS before it is timed. The JSON is rewritten after every row.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

from kernellab.kernels import match_templates
from kernellab.sandbox.candidate_module import load_candidate
from kernellab.tasks.load import SUITE_ROOT, load_task
from kernellab.tasks.materialize import (
    build_model,
    cast_model,
    load_problem,
    module_inputs,
)
from kernellab.tasks.model import Visibility

BIG = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "NUM_WARPS": 8, "NUM_STAGES": 3}
VARIANTS = [
    ("tma 128x256x64 w8 s3 (defaults)", {}),
    ("tma 128x256x64 w8 s4", {**BIG, "NUM_STAGES": 4}),
    ("tma 128x128x64 w8 s4", {**BIG, "BLOCK_N": 128, "NUM_STAGES": 4}),
    ("tma 128x128x64 w4 s4", {**BIG, "BLOCK_N": 128, "NUM_WARPS": 4, "NUM_STAGES": 4}),
    ("tma 256x128x64 w8 s3", {**BIG, "BLOCK_M": 256, "BLOCK_N": 128}),
    ("tma 128x256x64 w8 s3 GROUP_M 16", {**BIG, "GROUP_M": 16}),
    ("tma 128x256x64 w8 s3 warp-specialised", {**BIG, "WARP_SPECIALIZE": 1}),
    ("pointers 128x256x64 w8 s3", {**BIG, "USE_TMA": 0}),
    ("pointers 128x128x64 w8 s4", {**BIG, "BLOCK_N": 128, "NUM_STAGES": 4, "USE_TMA": 0}),
]


def bench(fn) -> float:
    import triton.testing

    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e3


def load(match, params: dict, folder: Path, name: str):
    """The variant's module, rendered into ``folder`` and imported as the harness imports a candidate."""
    path = folder / f"{name}.py"
    path.write_text(match.render(params))
    return load_candidate(str(path), name)[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/results/matmul_variants.json"))
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--total-time", type=float, default=150.0)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("matmul_variants: needs a CUDA device", file=sys.stderr)
        return 2
    start = time.monotonic()
    rows: list[dict] = []

    def emit(row: dict) -> None:
        rows.append(row)
        print(json.dumps(row), flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows}, indent=1))

    task = load_task("matmul/matmul_nt")
    match = match_templates(task)[0]
    n = args.size
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for dtype in (torch.bfloat16, torch.float16):
            a = torch.randn(n, n, device="cuda", dtype=dtype)
            b = torch.randn(n, n, device="cuda", dtype=dtype)
            ref = a @ b.t()
            cublas = bench(lambda a=a, b=b: a @ b.t())
            flop = 2 * n ** 3
            emit({"shape": f"{n}^3", "dtype": str(dtype), "variant": "cuBLAS", "us": cublas,
                  "tflops": flop / cublas / 1e6})
            variants = VARIANTS if dtype == torch.bfloat16 else VARIANTS[:3]
            for i, (label, params) in enumerate(variants):
                if time.monotonic() - start > args.total_time:
                    break
                try:
                    module = load(match, params, folder, f"v{i}_{str(dtype)[6:]}")
                    model = module.ModelNew()
                    out = model(a, b)
                    err = ((out.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
                    us = bench(lambda model=model, a=a, b=b: model(a, b))
                    emit({"shape": f"{n}^3", "dtype": str(dtype), "variant": label, "us": us,
                          "tflops": flop / us / 1e6, "vs_cublas": cublas / us, "max_rel_err": err,
                          "tma": bool(module._tma_ok(a, b.t())) and params.get("USE_TMA", 1) == 1})
                except Exception as exc:  # noqa: BLE001 - a variant this Triton lacks: say so, go on
                    emit({"shape": f"{n}^3", "dtype": str(dtype), "variant": label,
                          "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
        # float32: IEEE (TF32 off) as cuBLAS runs it, the FMA kernel, and tf32x3
        a = torch.randn(n, n, device="cuda")
        b = torch.randn(n, n, device="cuda")
        exact = (a.double() @ b.double().t())
        torch.backends.cuda.matmul.allow_tf32 = False
        cublas = bench(lambda: a @ b.t())
        emit({"shape": f"{n}^3", "dtype": "torch.float32", "variant": "cuBLAS (TF32 off)", "us": cublas,
              "max_abs_err": ((a @ b.t()).double() - exact).abs().max().item()})
        for i, (label, params) in enumerate([("FMA (ieee)", {}), ("tf32x3", {"F32_SPLIT": 1}),
                                              ("tf32x3 128x128x32 w8 s3", {"F32_SPLIT": 1, "BLOCK_M_F32": 128,
                                                                          "BLOCK_N_F32": 128, "BLOCK_K_F32": 32,
                                                                          "NUM_WARPS_F32": 8})]):
            if time.monotonic() - start > args.total_time:
                break
            try:
                model = load(match, params, folder, f"f32_{i}").ModelNew()
                out = model(a, b)
                us = bench(lambda model=model: model(a, b))
                emit({"shape": f"{n}^3", "dtype": "torch.float32", "variant": label, "us": us,
                      "vs_cublas": cublas / us, "max_abs_err": (out.double() - exact).abs().max().item()})
            except Exception as exc:  # noqa: BLE001
                emit({"shape": f"{n}^3", "dtype": "torch.float32", "variant": label,
                      "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
        # the suite's matmul tasks: template defaults vs the eager reference, largest seen config, bf16
        for folder_ in sorted(p.parent for p in SUITE_ROOT.glob("matmul/*/reference.py")):
            if time.monotonic() - start > args.total_time:
                break
            t = load_task(folder_)
            found = [m for m in match_templates(t) if m.template.name == "matmul"]
            if not found or "bfloat16" not in t.dtypes:
                continue
            config = t.configs_of(Visibility.SEEN)[-1]
            try:
                problem = load_problem(t, config)
                init = problem.init_inputs()
                ref_model = cast_model(build_model(problem.module.Model, init, 0), "bfloat16", t.keep_dtype, "cuda")
                inputs = module_inputs(problem.module, 0, "cuda", "bfloat16", t.keep_dtype)
                cand = cast_model(build_model(load(found[0], {}, folder, f"suite_{len(rows)}").ModelNew, init, 0),
                                  "bfloat16", t.keep_dtype, "cuda")
                cand.load_state_dict(ref_model.state_dict())
                with torch.no_grad():
                    expected, got = ref_model(*inputs), cand(*inputs)
                    err = ((got.float() - expected.float()).abs().max() / expected.float().abs().max()).item()
                    eager = bench(lambda ref_model=ref_model, inputs=inputs: ref_model(*inputs))
                    us = bench(lambda cand=cand, inputs=inputs: cand(*inputs))
                emit({"task": t.id, "config": config.label, "dtype": "torch.bfloat16", "eager_us": eager,
                      "template_us": us, "vs_eager": eager / us, "max_rel_err": err})
            except Exception as exc:  # noqa: BLE001
                emit({"task": t.id, "config": config.label, "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
