"""Profile a model call and rank its ops and fusable chains by share of the time (Amdahl).

The model runs once through Dynamo with a backend that executes each captured FX graph node by node,
every node inside a profiler range of its own (``graph.labelled_runner``). ``evaluate.profiling``
then attributes every device kernel to the CPU op that launched it (the profiler's correlation, not
kernel names) and every op to its node; backward ops go to the node whose forward op created them.
A chain's time is the sum of its nodes'; chains with the same signature (the same op in every layer)
are one ``Hotspot``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from kernellab.evaluate.profiling import CallProfile, profile_call
from kernellab.optimize.amdahl import FACTORS, whole_speedup
from kernellab.optimize.chains import Chain, find_chains
from kernellab.optimize.graph import Capture, CapturedGraph, labelled_runner
from kernellab.optimize.model_source import ModelBundle

log = logging.getLogger(__name__)

DTYPES = {"bf16": torch.bfloat16, "bfloat16": torch.bfloat16, "fp16": torch.float16, "float16": torch.float16,
          "fp32": torch.float32, "float32": torch.float32}

# The suite tasks that already cover a chain kind (a user can benchmark agents on them directly).
SUITE_TASKS: dict[str, str] = {
    "add_rmsnorm": "normalization/add_rmsnorm", "rmsnorm": "normalization/rmsnorm",
    "add_layer_norm": "normalization/add_layernorm", "layer_norm": "normalization/layernorm",
    "act_mul:silu": "gated_mlp/swiglu_two_inputs", "act_mul:gelu": "gated_mlp/geglu_tanh_two_inputs",
    "rope": "positional/rope_qk", "bias_act:gelu": "matmul_epilogue/linear_bias_gelu",
    "bias_act:silu": "matmul_epilogue/linear_bias_silu", "bias_act:relu": "matmul_epilogue/linear_bias_relu",
    "linear_cross_entropy": "losses/fused_linear_cross_entropy", "op:linear": "matmul_epilogue/linear_bias",
    "op:sdpa": "attention/sdpa_causal", "op:embedding": "indexing/embedding",
    "op:cross_entropy": "losses/cross_entropy", "op:softmax": "softmax/softmax",
}


def resolve_dtype(name: str) -> torch.dtype:
    try:
        return DTYPES[name]
    except KeyError:
        raise ValueError(f"--dtype {name!r}: one of {', '.join(DTYPES)}") from None


@dataclass
class Hotspot:
    """One op or chain (all its instances in the model), its time and what speeding it up would give."""

    key: str  # e.g. add_rmsnorm[16384x2048,bfloat16]
    kind: str
    spec: dict[str, Any]
    shapes: list[tuple[int, ...] | None]
    dtypes: list[str]
    instances: int
    time_us: float  # per model call, all instances
    share: float  # of the measured total
    chains: list[Chain] = field(default_factory=list, repr=False)
    suite_task: str | None = None
    template: str | None = None  # filled by extraction: the search template that matches its task
    extractable: bool = False

    @property
    def projections(self) -> dict[str, float]:
        return {("inf" if f == float("inf") else f"{f:g}"): whole_speedup(self.share, f) for f in FACTORS}

    @property
    def name(self) -> str:
        sub = self.spec.get("op") or self.spec.get("act")
        return f"{self.kind}:{sub}" if sub else self.kind

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "kind": self.kind, "name": self.name, "spec": {k: str(v) for k, v in self.spec.items()},
                "shapes": [list(s) if s else None for s in self.shapes], "dtypes": self.dtypes,
                "instances": self.instances, "time_us": round(self.time_us, 3), "share": round(self.share, 5),
                "projected_whole_speedup": {k: round(v, 4) for k, v in self.projections.items()},
                "suite_task": self.suite_task, "template": self.template, "extractable": self.extractable}


@dataclass
class ModelProfile:
    model: str
    mode: str
    dtype: str
    device: str
    sizes: dict[str, int]
    call: CallProfile
    hotspots: list[Hotspot]
    graphs: int
    captured: list[CapturedGraph] = field(default_factory=list, repr=False)
    skipped_kinds: list[str] = field(default_factory=list)  # fusions not formed (no template implements them)

    def rerank(self, skip: frozenset[str]) -> None:
        """Rank again without forming the chain kinds in ``skip`` (their parts become their own entries)."""
        self.skipped_kinds = sorted(skip)
        self.hotspots = rank(self.captured, self.call, skip)

    def to_dict(self) -> dict[str, Any]:
        c = self.call
        return {"model": self.model, "mode": self.mode, "dtype": self.dtype, "device": self.device,
                "sizes": self.sizes, "graphs": self.graphs,
                "time_basis": "device kernel time" if self.device.startswith("cuda") else "CPU time in ops",
                "wall_us": round(c.wall_us, 3),
                "total_us": round(c.total_us, 3), "attributed_us": round(c.attributed_us, 3),
                "coverage": round(c.coverage, 4), "unscoped_us": round(c.unscoped_us, 3),
                "unattributed_us": round(c.unattributed_us, 3), "skipped_kinds": self.skipped_kinds,
                "hotspots": [h.to_dict() for h in self.hotspots]}


def model_call(bundle: ModelBundle, mode: str) -> Callable[..., Any]:
    """The function Dynamo captures: the forward (inference) or the loss (training)."""
    if mode == "train":
        return lambda *inputs: bundle.loss(bundle.model, *inputs)
    return lambda *inputs: bundle.forward(bundle.model, *inputs)


def run_step(fn: Callable[..., Any], inputs: tuple, mode: str) -> Any:
    if mode == "train":
        loss = fn(*inputs)
        loss.backward()
        return loss
    with torch.no_grad():
        return fn(*inputs)


def profile_model(bundle: ModelBundle, *, mode: str, dtype: torch.dtype, device: str, calls: int = 2,
                  seed: int = 0) -> ModelProfile:
    """Capture, profile and rank; ``bundle.model`` must already be on ``device`` in ``dtype``."""
    capture = Capture(wrap=labelled_runner)
    compiled = torch.compile(model_call(bundle, mode), backend=capture, dynamic=False)
    inputs = bundle.inputs(device=device, dtype=dtype, seed=seed)
    bundle.model.train(mode == "train")
    torch._dynamo.reset()
    call = profile_call(lambda: run_step(compiled, inputs, mode), device=device, calls=calls, warmup=1)
    bundle.model.zero_grad(set_to_none=True)
    hotspots = rank(capture.graphs, call)
    return ModelProfile(bundle.name, mode, str(dtype).replace("torch.", ""), device, dict(bundle.sizes), call,
                        hotspots, len(capture.graphs), capture.graphs)


def rank(graphs: list[CapturedGraph], call: CallProfile, skip: frozenset[str] = frozenset()) -> list[Hotspot]:
    times = call.by_scope()
    total = call.total_us or 1.0
    groups: dict[tuple, Hotspot] = {}
    for graph in graphs:
        for chain in find_chains(graph.module, skip):
            t = sum(times.get(graph.label(n), 0.0) for n in chain.nodes)
            if t <= 0:
                continue
            sig = chain.signature()
            spot = groups.get(sig)
            if spot is None:
                shapes = list(sig[2])
                dims = ";".join("x".join(str(d) for d in s) for s in shapes if s)
                kind_name = chain.kind + (f":{chain.spec['op']}" if chain.kind == "op" else "")
                sub = chain.spec.get("act")
                spot = Hotspot(f"{kind_name}{':' + sub if sub else ''}[{dims},{sig[3][0] if sig[3] else ''}]",
                               chain.kind, dict(chain.spec), shapes, list(sig[3]), 0, 0.0, 0.0)
                spot.suite_task = SUITE_TASKS.get(spot.name) or SUITE_TASKS.get(chain.kind)
                groups[sig] = spot
            spot.instances += 1
            spot.time_us += t
            spot.chains.append(chain)
    spots = sorted(groups.values(), key=lambda h: -h.time_us)
    for h in spots:
        h.share = h.time_us / total
    return spots
