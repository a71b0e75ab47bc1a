"""How far apart sound float32 attention kernels are on the stability stage's mixed-scale inputs
(q, k, v scaled elementwise by e^(2N)): eager SDPA, its math path, softmax(q k^T) v written out, the
suite's Triton baseline and eager over the keys in reverse order, each against float64. What sets the
stability stage's widened tolerance (``evaluate/tolerance.py``). Needs a CUDA GPU.

    python benchmarks/attention_fp32_spread.py [--seeds 8] [--out docs/results/h100_attention_fp32_mixed.json]
"""
import argparse
import importlib.util
import json
from pathlib import Path

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from kernellab.evaluate.tolerance import normalised_error
from kernellab.tasks.materialize import perturb_for_domain
from kernellab.tasks.model import InputDomain

SUITE = Path(__file__).parents[1] / "src/kernellab/tasks/suite/attention"


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def manual(q, k, v, causal=False, cap=None):
    s = q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5
    if cap:
        s = cap * torch.tanh(s / cap)
    if causal:
        length = q.shape[2]
        s = s.masked_fill(torch.ones(length, length, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.softmax(s, -1) @ v


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--out", default="benchmarks/results/attention_fp32_spread.json")
    args = parser.parse_args()
    rows = []
    # each task's first seen config, where the stability stage draws its inputs
    cases = [("decode_kv_cache", [(16, 32, 1, 128), (16, 32, 1024, 128), (16, 32, 1024, 128)], False, None),
             ("attention_softcap", [(4, 16, 1024, 128)] * 3, True, 50.0)]
    for task, shape, causal, cap in cases:
        ref_mod = load(f"{SUITE}/{task}/reference.py", "ref_" + task).Model().cuda()
        base = load(f"{SUITE}/{task}/baseline.py", "base_" + task).ModelNew().cuda()
        for seed in range(args.seeds):
            g = torch.Generator(device="cuda")
            g.manual_seed(seed)
            xs = [perturb_for_domain(torch.zeros(s, device="cuda"), InputDomain.REAL, "mixed", g) for s in shape]
            ref = ref_mod(*[x.double() for x in xs])
            r = {"task": task, "seed": seed}
            r["eager"] = normalised_error(ref_mod(*xs), ref)[1]
            with sdpa_kernel([SDPBackend.MATH]):
                r["eager_math"] = normalised_error(ref_mod(*xs), ref)[1]
            r["manual_fp32"] = normalised_error(manual(*xs, causal=causal, cap=cap), ref)[1]
            r["triton_baseline"] = normalised_error(base(*xs), ref)[1]
            # the same computation with the key axis reversed: only the accumulation order differs
            if task == "decode_kv_cache":
                r["eager_keys_reversed"] = normalised_error(ref_mod(xs[0], xs[1].flip(2), xs[2].flip(2)), ref)[1]
            rows.append(r)
            print(json.dumps({k: (f"{v:.2e}" if isinstance(v, float) else v) for k, v in r.items()}), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
