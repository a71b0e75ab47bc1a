"""Evaluation options, resolved in one place: defaults → task.toml → caller (CLI flags).

The result is one frozen object passed down; no stage reads a flag from anywhere else.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from kernellab.evaluate.verdict import Stage
from kernellab.tasks.model import DTYPES, Policy, Task, TaskError

ALL_STAGES = frozenset(Stage)
CONFIG_SETS = ("seen", "holdout", "all")
HOLDOUT_TIMING = ("one", "all")
# The dtype holdout configs are timed in under "one": the one LLM kernels are deployed in. The holdout
# speedup (and the score's holdout speedup delta) needs one number per config; timing every dtype
# tripled the holdout stage's timing for no extra signal about generalisation.
HOLDOUT_TIMING_PREFERRED = "bfloat16"


@dataclass(frozen=True)
class EvalOptions:
    """What to run. ``None`` fields take the task's value or the built-in default."""

    policy: Policy | None = None
    configs: str = "all"  # seen | holdout | all  (holdout: also run the holdout stage)
    # None: the task's dtypes; "one": one per task (bfloat16 where the task has it, else its first,
    # a campaign's cheap setting); or a tuple of dtypes.
    dtypes: tuple[str, ...] | str | None = None
    seed: int = 0
    stages: frozenset[Stage] = ALL_STAGES
    trials: int = 3  # fresh input sets per seen config in the shape sweep
    request_timeout_s: float = 120.0  # one child request (includes JIT compiles of new shapes)
    compile_timeout_s: float = 300.0  # import and first instantiation: a load_inline build can take minutes
    timing_budget_s: float = 0.6  # per config × dtype, candidate side
    timing_target_ci_pct: float = 1.0
    timing_min_samples: int = 10  # with the CI and resolution rules: see docs/verifier.md "Speed"
    timing_max_samples: int = 400
    time_holdout: bool = True
    # Which dtypes holdout configs are timed in (correctness is checked in every dtype regardless):
    # "one" (see ``holdout_timing_dtypes``), "all", or a tuple of dtypes.
    holdout_timing_dtypes: str | tuple[str, ...] = "one"
    compile_baseline: bool = True  # torch.compile is seconds per config: off for search loops and tests
    # False: eager and the baseline kernel are timed afresh in this evaluation instead of read from the
    # cache. A cached eager time is one measurement shared by every candidate of a run, so its own
    # run-to-run variation (1-2% on an H100) is in no interval; a finalist's re-timing rounds need it.
    cached_baselines: bool = True
    memory_fraction: float | None = 0.9
    # Helper children that compile a Triton candidate's kernels ahead of its checks (compile_ahead.py);
    # None: up to ``compile_ahead.MAX_HELPERS`` on a GPU of its own, 0: none.
    compile_ahead: int | None = None
    # The sanitize stage (compute-sanitizer memcheck, racecheck, initcheck on the small and edge configs;
    # GPU only): seconds per candidate, so a search loop's screening evaluations turn it off.
    sanitize: bool = True
    # Each tool's process, start to exit: past it the tool is stopped and the verdict says how many of
    # its calls (smallest configs first) it checked. 60 s covers racecheck on a 1x4096x4096 matmul (~50 s
    # on an H100) and leaves the stage at ~7 s for RMSNorm.
    sanitize_timeout_s: float = 60.0
    device: str | None = None  # "cuda" | "cpu"; default: cuda when available
    work_dir: Path | None = None
    cache_dir: Path | None = None
    cpu_max_elements: int = 1 << 16  # configs larger than this are skipped under the interpreter
    debug: bool = False

    def __post_init__(self) -> None:
        if self.configs not in CONFIG_SETS:
            raise TaskError(f"--configs must be one of {', '.join(CONFIG_SETS)}, not {self.configs!r}")
        if isinstance(self.dtypes, str) and self.dtypes != "one":
            raise TaskError(f"dtypes must be \"one\" or a tuple of dtypes, not {self.dtypes!r}")
        for dt in () if isinstance(self.dtypes, str) else self.dtypes or ():
            if dt not in DTYPES:
                raise TaskError(f"--dtype {dt!r} is not one of {', '.join(DTYPES)}")
        timed = self.holdout_timing_dtypes
        if isinstance(timed, str):
            if timed not in HOLDOUT_TIMING:
                raise TaskError(f"holdout_timing_dtypes must be one of {', '.join(HOLDOUT_TIMING)} or a tuple of "
                                f"dtypes, not {timed!r}")
        else:
            for dt in timed:
                if dt not in DTYPES:
                    raise TaskError(f"holdout timing dtype {dt!r} is not one of {', '.join(DTYPES)}")


@dataclass(frozen=True)
class Resolved:
    """Options after the task and the machine had their say."""

    options: EvalOptions
    policy: Policy
    dtypes: tuple[str, ...]
    device: str
    interpret: bool
    cache_dir: Path
    notes: tuple[str, ...] = field(default_factory=tuple)

    def wants(self, stage: Stage) -> bool:
        return stage in self.options.stages

    def holdout_timing_dtypes(self) -> tuple[str, ...]:
        """The dtypes holdout configs are timed in: under "one", bfloat16 where it is evaluated, else the
        first evaluated dtype (the task's first); under "all", every evaluated dtype; a tuple names them
        (those not evaluated are left out, since their holdout outputs were never checked)."""
        chosen = self.options.holdout_timing_dtypes
        if chosen == "all":
            return self.dtypes
        if chosen == "one":
            return one_dtype(self.dtypes)
        return tuple(d for d in self.dtypes if d in chosen)


def one_dtype(dtypes: tuple[str, ...]) -> tuple[str, ...]:
    """The one dtype chosen from ``dtypes`` where one stands for all: bfloat16 if among them, else the
    first (holdout timings under "one", and ``dtypes="one"``)."""
    return (HOLDOUT_TIMING_PREFERRED,) if HOLDOUT_TIMING_PREFERRED in dtypes else dtypes[:1]


def default_cache_dir() -> Path:
    return Path(os.environ.get("KERNELLAB_CACHE_DIR", Path.home() / ".cache" / "kernellab"))


def resolve(task: Task, options: EvalOptions, cuda_available: bool) -> Resolved:
    notes = []
    device = options.device or ("cuda" if cuda_available else "cpu")
    if device == "cuda" and not cuda_available:
        raise TaskError("--device cuda was asked for, but no CUDA GPU is visible")
    if options.dtypes == "one":
        usable = [d for d in task.dtypes if device != "cpu" or d != "bfloat16"] or list(task.dtypes)
        dtypes = one_dtype(tuple(usable))
        notes.append(f"one dtype per task: {dtypes[0]} of {list(task.dtypes)}")
    else:
        dtypes = options.dtypes or task.dtypes
    unknown = [d for d in dtypes if d not in task.dtypes]
    if unknown and options.dtypes:
        notes.append(f"dtype {unknown[0]} is not among the task's dtypes {list(task.dtypes)}; evaluated anyway")
    if device == "cpu" and "bfloat16" in dtypes and not options.dtypes and len(dtypes) > 1:
        # The Triton interpreter (triton <= 3.9) holds bfloat16 as raw 16-bit integers, so arithmetic
        # on bfloat16 values without a cast gives garbage: judging it would charge the interpreter's
        # gap to the candidate. bfloat16 is checked on the GPU only.
        dtypes = tuple(d for d in dtypes if d != "bfloat16")
        notes.append("bfloat16 is not checked under the Triton interpreter (it does not emulate it); "
                     "run on a GPU for bfloat16")
    policy = options.policy or task.policy
    cache = options.cache_dir or default_cache_dir()
    if not options.sanitize:
        options = replace(options, stages=options.stages - {Stage.SANITIZE})
    if options.configs == "holdout":
        # Re-scoring on held-out shapes: the candidate still has to load and pass its small config.
        options = replace(options, stages=options.stages & {Stage.STATIC, Stage.LOAD, Stage.SMOKE, Stage.HOLDOUT})
        notes.append("--configs holdout: seen, edge and backward checks and seen timings not run")
    return Resolved(options=options, policy=policy, dtypes=tuple(dtypes), device=device,
                    interpret=device == "cpu", cache_dir=cache, notes=tuple(notes))


def with_stages(options: EvalOptions, *stages: Stage) -> EvalOptions:
    """A cheap selection, e.g. correctness on seen configs plus timing for a search loop."""
    return replace(options, stages=frozenset(stages) | {Stage.STATIC, Stage.LOAD})
