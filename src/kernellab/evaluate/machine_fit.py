"""Whether a task can be evaluated on this machine at all.

An evaluation needs at least one config it can run: the small config, or else a seen config within
the machine's limits. Without one, the pipeline used to index a config that did not exist (a
harness error) or build reference cases the memory could not hold (the kernel's OOM killer ended
the process, and no verdict came). "Too large for this machine" is neither the candidate's failure
nor the evaluator's: it is an unusable input, reported in one line before anything is built
(``TooLargeError``; ``kernellab eval`` exits 2).

Sizes are counted without allocating (inputs, weights and outputs on the meta device). On the CPU,
inputs and weights, and outputs, must each be within ``--cpu-max-elements`` (``EvalSession.fits_device``). Memory is estimated from them: the judge holds a case's inputs, weights and outputs
in the evaluated dtype and again in float64, the candidate's process its own copies, and the
stages keep a few cases at once; ``COPIES`` float64 copies of the footprint stand for that.
Intermediate activations inside a model are not counted, so the estimate is a floor.
"""

from __future__ import annotations

from pathlib import Path

import torch

from kernellab.tasks.model import Config, TaskError, Visibility

COPIES = 4  # float64 copies of inputs, weights and outputs an evaluation holds at its peak (see above)
BYTES = 8  # float64


class TooLargeError(TaskError):
    """The task has no config this machine can evaluate: one line saying which limit and by how much."""


def available_bytes(device: str) -> int:
    """Memory an evaluation may use: the GPU's total, or the CPU's available memory (the smaller of
    ``MemAvailable`` and what a cgroup v2 limit leaves)."""
    if device == "cuda":
        return torch.cuda.get_device_properties(0).total_memory
    sizes = [_meminfo_available()]
    limit, used = _read_int(Path("/sys/fs/cgroup/memory.max")), _read_int(Path("/sys/fs/cgroup/memory.current"))
    if limit is not None and used is not None:
        sizes.append(max(limit - used, 0))
    known = [s for s in sizes if s is not None]
    return min(known) if known else 1 << 62


def require_fit(session) -> Config:
    """The config an evaluation starts with (``stages.load.first_config``), checked against the
    machine's limits; raises ``TooLargeError`` naming the limit."""
    from kernellab.evaluate.stages.load import first_config

    config = first_config(session)
    problem = session.problem(config)
    inputs, outputs = problem.input_numel(), problem.output_numel()
    where = f"{session.task.id}: too large for this machine:"
    if not session.fits_device(config):
        raise TooLargeError(f"{where} no small config, and config {config.label} has {_count(inputs)} elements of "
                            f"inputs and weights and {outputs:,} of outputs, above --cpu-max-elements "
                            f"{session.options.cpu_max_elements:,} (raise it, or evaluate on a GPU)")
    footprint = problem.footprint_numel()
    what = f"config {config.label} has {_count(footprint)} elements of inputs, weights and outputs"
    needed = footprint * BYTES * COPIES
    available = available_bytes(session.device)
    if needed > available:
        kind = "small " if config.visibility is Visibility.SMALL else ""
        raise TooLargeError(f"{where} its {kind}{what}: about {needed / 2**30:.1f} GiB to evaluate, "
                            f"{available / 2**30:.1f} GiB available on the {session.device}")
    return config


def require_judged(verdict, device: str, task_id: str, alone: bool) -> None:
    """Raise ``TooLargeError`` when the judge itself ran out of device memory (a harness error whose
    error says so), with the GPU to itself (``alone``) or as a lone process: the estimate above is a
    floor, and a task whose float64 reference and copies exceed this GPU is an unusable input here,
    not a defect of the evaluator. The candidate's child running out stays the candidate's failure."""
    from kernellab.evaluate.gpu_sharing import out_of_device_memory
    from kernellab.evaluate.verdict import Status

    if device != "cuda" or verdict.status is not Status.HARNESS_ERROR or not out_of_device_memory(verdict.error):
        return
    stage = verdict.failed_stage.value if verdict.failed_stage is not None else "?"
    size = f", {available_bytes('cuda') / 2**30:.1f} GiB" if torch.cuda.is_available() else ""
    beside = "with the GPU to itself" if alone else "on a GPU that other processes may share"
    first = (verdict.error or "").splitlines()[0][:160]
    raise TooLargeError(f"{task_id}: too large for this machine: the judge ran out of device memory at the {stage} "
                        f"stage, {beside}{size}: {first}")


def _count(n: int) -> str:
    import sys

    return "unboundedly many (get_inputs cannot be traced)" if n == sys.maxsize else f"{n:,}"


def _meminfo_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
