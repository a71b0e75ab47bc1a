"""Which correctness calls run under the GPU profiler: drawn at random, in every stage and dtype.

The policy is judged from what ran on the GPU, so a candidate that behaves well only on traced calls
(its own kernel on the first call, library kernels when inputs require grad or on edge shapes) must
not know which calls those are. Each stage's calls are grouped (a config × dtype of the shape sweep
or the stability stage, the two determinism calls); in every group at least one call is traced, and
each other call with probability ``SAMPLED_SHARE``. The draw is seeded by the evaluation seed, which
the candidate's process never sees. Stages with few calls, where a fallback pays most (the smoke
config, edge shapes, gradients, unseen shapes), are traced whole.

Cost: a profiled call costs about 3 ms more than a plain one (the profiler's start and stop, measured
on an H200 with torch 2.11: 3.3 ms against 0.03 ms for a small Triton kernel), so tracing every call
of an evaluation (~70 for the RMSNorm fixture) would add ~0.25 s to a ~4.7 s warm evaluation. This
draw traces ~50 of them. The CPU's op log sees every call at no extra cost, so this only matters on
a GPU.
"""

from __future__ import annotations

import random

from kernellab.evaluate.verdict import Stage

TRACED_WHOLE = frozenset({Stage.SMOKE, Stage.EDGE, Stage.BACKWARD, Stage.HOLDOUT})
SAMPLED_SHARE = 0.5


def traced_calls(seed: int, stage: Stage, group: str, count: int) -> frozenset[int]:
    """Indices (0..count-1) of a group's calls to trace: at least one, each other one with probability
    ``SAMPLED_SHARE``; all of them in the stages of ``TRACED_WHOLE``."""
    if count <= 0:
        return frozenset()
    if stage in TRACED_WHOLE:
        return frozenset(range(count))
    rng = random.Random(f"kernellab-trace|{seed}|{stage.value}|{group}")  # str seeds hash with sha512
    first = rng.randrange(count)
    return frozenset({first} | {i for i in range(count) if i != first and rng.random() < SAMPLED_SHARE})


def traced(ctx, stage: Stage, group: str, index: int, count: int) -> bool:
    """Whether call ``index`` of ``count`` in ``group`` of ``stage`` runs under the GPU profiler."""
    return ctx.session.device == "cuda" and index in traced_calls(ctx.session.options.seed, stage, group, count)
