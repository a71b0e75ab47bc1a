"""EvalSession: the warm evaluator of one task, reused across many candidates.

It keeps what is expensive and candidate-independent: the fork server, reference cases (inputs,
float64 outputs, tolerances), baseline timings and device ceilings. Each candidate still gets a
fresh child process; a child that crashes costs that candidate its verdict and nothing else.
"""

from __future__ import annotations

import logging
import os
import platform
import shutil
import tempfile
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

import kernellab
from kernellab.evaluate import gpu_sharing
from kernellab.evaluate.ceilings import device_name
from kernellab.evaluate.machine_fit import require_fit, require_judged
from kernellab.evaluate.options import EvalOptions, Resolved, resolve
from kernellab.evaluate.reference import Case, add_precision_probes, build_case, case_nbytes
from kernellab.evaluate.verdict import Mode, Stage, Status, Verdict
from kernellab.sandbox.forkserver import ForkServer, hold_ptxas, kept_env, server_env, shared_server
from kernellab.tasks.materialize import Problem, load_problem
from kernellab.tasks.model import Config, Task, TaskError, Visibility

log = logging.getLogger(__name__)


def versions() -> dict[str, str]:
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:  # pragma: no cover - triton is a dependency
        triton_version = "absent"
    return {"python": platform.python_version(), "torch": torch.__version__, "triton": triton_version,
            "kernellab": kernellab.__version__}


def device_label(device: str) -> str:
    """What verdicts name the device by: the GPU's name, or the CPU's."""
    return device_name(device) or f"cpu ({platform.processor() or platform.machine()})"


class EvalSession:
    def __init__(self, task: Task, options: EvalOptions | None = None):
        self.task = task
        self.options = options or EvalOptions()
        self.resolved: Resolved = resolve(task, self.options, torch.cuda.is_available())
        self.device = self.resolved.device
        if self.device == "cuda":
            hold_ptxas()  # before the fork server's environment is taken and any baseline compiles
        # The fork server imports torch and triton (seconds): it starts now and the first candidate
        # waits for it, so a cold evaluation spends that time on the judge's own start (its CUDA
        # context, the first reference case) instead of one after the other.
        self.server(wait=False)
        self._own_work_dir = self.options.work_dir is None
        self.work_dir = Path(self.options.work_dir or tempfile.mkdtemp(prefix="kernellab-eval-"))
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self._problems: dict[Config, Problem] = {}
        self._cases: OrderedDict[tuple, Case] = OrderedDict()  # the next to evict first
        self._case_bytes: dict[tuple, int] = {}
        self._fits: dict[Config, bool] = {}
        self.case_cache_bytes = _case_budget(self.device)
        self.last_op_stats: dict[str, list[float]] = {}  # the last candidate's child requests (benchmarks)
        # Asks the candidate's child being evaluated to let go of the judge's memory (set by the load
        # stage, cleared when the evaluation ends): used when a case does not fit on the device.
        self.child_release: Callable[[], Any] | None = None
        # Called with each stage as it starts (the CLI's live stage line); nothing is passed back.
        self.on_stage: Callable[[Stage], None] | None = None
        self.baselines: dict[tuple, Any] = {}
        self.ceilings = None
        self._count = 0
        self.versions = versions()
        self.device_label = device_label(self.device)

    # ------------------------------------------------------------------------------------ lifecycle

    def __enter__(self) -> EvalSession:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.drop_cases()
        if self._own_work_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    @property
    def mode(self) -> Mode:
        return Mode.GPU if self.device == "cuda" else Mode.INTERPRET

    def child_env(self, child_dir: Path) -> dict[str, str]:
        env = kept_env()
        env.update(HOME=str(child_dir), TMPDIR=str(child_dir), TRITON_CACHE_DIR=str(child_dir / "triton"),
                   TORCH_EXTENSIONS_DIR=str(child_dir / "torch_extensions"), PYTHONDONTWRITEBYTECODE="1")
        if self.resolved.interpret:
            env["TRITON_INTERPRET"] = "1"
        return env

    def server(self, wait: bool = True) -> ForkServer:
        """The process-wide fork server for this mode (children get their own environment);
        ``wait=False`` starts it and returns before it is ready."""
        return shared_server(server_env(self.resolved.interpret), wait=wait)

    def new_child_dir(self) -> Path:
        self._count += 1
        path = self.work_dir / f"candidate-{self._count:04d}"
        path.mkdir(parents=True, exist_ok=True)
        return path

    # ------------------------------------------------------------------------------------ references

    def problem(self, config: Config) -> Problem:
        if config not in self._problems:
            self._problems[config] = load_problem(self.task, config)
        return self._problems[config]

    def case(self, config: Config, dtype: str, seed: int, *, backward: bool = False,
             variant: str | None = None, probe: bool = False, once: bool = False) -> Case:
        """A reference case, built once per (config, dtype, seed, backward, variant) and kept.
        The lower-precision probes of a float32 case (three eager runs that name a downcast) are made
        when a check of it fails (``checking``), not when it is built: a passing candidate never needs
        them. ``probe=True`` makes them now.

        Cases are kept least-recently-used within ``case_cache_bytes``, so a session that moves
        through large configs does not hold every one of them on the device. ``once``: the
        evaluation uses this case once (a stability variant, an edge config, a holdout in a dtype
        that is not timed): it is kept at the evicted end, so that when a task's cases do not all
        fit, these go first and the ones an evaluation uses again stay. Every evaluation asks for
        its cases in the same order, and least-recently-used eviction of a cycle a little larger
        than the budget evicts every case before its next use (the RMSNorm evaluation's ~37 GB
        against 45% of an H100 did that); this way only the once-used cases beyond the budget are
        rebuilt.
        """
        key = (config, dtype, seed, backward, variant)
        if key in self._cases:
            case = self._cases[key]
            self._cases.move_to_end(key, last=not once)  # most recently used last, once-used first
            if probe:
                add_precision_probes(case)
            return case
        transform = _variant_transform(variant, seed) if variant else None
        try:
            case = build_case(self.problem(config), dtype, seed, self.device, backward=backward,
                              transform=transform, precision_probe=probe)
        except torch.OutOfMemoryError:
            # Other sessions or processes hold the device, or the candidate's child still maps the
            # last config's inputs (freed here, they stay allocated until it lets go): keep nothing,
            # have the child let go, and build again.
            self._evict(keep=0)
            self._take_back_from_child()
            case = build_case(self.problem(config), dtype, seed, self.device, backward=backward,
                              transform=transform, precision_probe=probe)
        case.variant = variant
        self._cases[key] = case
        if once:
            self._cases.move_to_end(key, last=False)
        self._case_bytes[key] = case_nbytes(case)
        self._evict(keep=1)
        return case

    def recount(self, case: Case) -> None:
        """A kept case grew (its float64 gradients were made on first use): count its bytes again."""
        key = (case.problem.config, case.dtype, case.seed, case.grad_outputs is not None, case.variant)
        if self._cases.get(key) is case:
            self._case_bytes[key] = case_nbytes(case)
            self._evict(keep=1)

    def _take_back_from_child(self) -> None:
        if self.child_release is not None:
            try:
                self.child_release()
            except Exception as exc:  # noqa: BLE001 - a child that cannot answer holds nothing worth waiting for
                log.info("the candidate's child did not let go of the judge's memory: %s", exc)
        if self.device == "cuda":
            gpu_sharing.give_back_memory()

    def _evict(self, keep: int) -> None:
        """Drop cases from the evicted end (once-used, then least recently used) beyond the budget,
        or while the device runs short of free memory (other sessions, the candidate child), keeping
        the ``keep`` at the other end."""
        while len(self._cases) > keep and (sum(self._case_bytes.values()) > self.case_cache_bytes
                                           or self._device_short()):
            oldest = next(iter(self._cases))
            del self._cases[oldest], self._case_bytes[oldest]
            if self.device == "cuda":
                torch.cuda.empty_cache()  # give the memory back: the candidate child needs it

    def _device_short(self) -> bool:
        if self.device != "cuda":
            return False
        free, total = torch.cuda.mem_get_info()
        return free < FREE_RESERVE * total

    def ceilings_for(self):
        """Device ceilings (measured once per device and versions, then read from the cache)."""
        if self.ceilings is None and self.device == "cuda":
            from kernellab.evaluate.ceilings import load_ceilings

            self.ceilings = load_ceilings(torch.device("cuda"), self.resolved.cache_dir)
        return self.ceilings

    def fits_device(self, config: Config) -> bool:
        """Under the interpreter, configs whose inputs and weights, or whose outputs, have more than
        ``cpu_max_elements`` elements are skipped (an outer product's inputs are small)."""
        if self.device == "cuda" or config.visibility is Visibility.SMALL:
            return True
        if config not in self._fits:
            problem, limit = self.problem(config), self.options.cpu_max_elements
            self._fits[config] = problem.input_numel() <= limit and problem.output_numel() <= limit
        return self._fits[config]

    # ------------------------------------------------------------------------------------ evaluation

    def new_verdict(self, path: Path, source: str) -> Verdict:
        import hashlib

        return Verdict(
            task={"id": self.task.id, "sha256": self.task.sha256},
            candidate={"path": str(path), "sha256": hashlib.sha256(source.encode()).hexdigest()},
            device=self.device_label, mode=self.mode, versions=self.versions,
            policy=self.resolved.policy.value, seed=self.options.seed, notes=list(self.resolved.notes))

    def evaluate(self, candidate: Path | str) -> Verdict:
        from kernellab.evaluate.pipeline import run_pipeline

        started = time.perf_counter()
        path = Path(candidate)
        require_fit(self)  # "too large for this machine" is an unusable input, before anything is built
        verdict = run_pipeline(self, path)
        if verdict.status is not Status.PASSED and gpu_sharing.has_guards() \
                and gpu_sharing.out_of_device_memory(verdict.error):
            # Out of memory beside other processes' evaluations, in the judge (a harness error) or in
            # the candidate's child (a failed stage, as a campaign on the H100 had one): nothing about
            # the candidate yet. Alone, a candidate that asks for more than the GPU has fails again.
            log.info("%s: out of device memory beside other evaluations; evaluating again alone", candidate)
            self.drop_cases()
            with gpu_sharing.alone():
                verdict = run_pipeline(self, path)
            verdict.notes.append("ran out of device memory beside other evaluations on this GPU; "
                                 "evaluated again with the GPU to itself")
            require_judged(verdict, self.device, self.task.id, alone=True)
        else:
            require_judged(verdict, self.device, self.task.id, alone=False)
        verdict.elapsed_s = time.perf_counter() - started
        return verdict

    def drop_cases(self) -> None:
        """Give back the device memory of every kept reference case."""
        self._cases.clear()
        self._case_bytes.clear()
        if self.device == "cuda":
            gpu_sharing.give_back_memory()


FREE_RESERVE = 0.2  # cases are dropped while less than this fraction of the GPU's memory is free


def _case_budget(device: str) -> int:
    """Device memory for kept reference cases: 45% of the GPU's (8 GiB on the CPU) split between the
    sessions that share the GPU (``gpu_sharing.shared_by``: a campaign's workers), or
    ``KERNELLAB_CASE_CACHE_GB`` (parallel shards started by hand): each one taking 45% would run the
    others out of memory.

    A full evaluation of a large task (RMSNorm up to 16384², three dtypes, forward and backward)
    holds about 40 GB of cases; with less, least-recently-used eviction drops every case before
    its next use and each candidate rebuilds them all. The candidate child's own needs are far
    below the rest."""
    override = os.environ.get("KERNELLAB_CASE_CACHE_GB")
    if override:
        try:
            return int(float(override) * (1 << 30))
        except ValueError:
            raise TaskError(f"KERNELLAB_CASE_CACHE_GB must be a number of GiB, not {override!r}") from None
    if device == "cuda":
        return int(torch.cuda.get_device_properties(0).total_memory * 0.45 / gpu_sharing.shared_by())
    return 8 << 30


def _variant_transform(variant: str, seed: int):
    """Adversarial input variants of the stability stage, each inside the input's declared domain."""
    from kernellab.tasks.materialize import device_generator, perturb_inputs

    def transform(problem: Problem, inputs: list[Any]) -> list[Any]:
        # One stream of random values per variant: scale-invariant ops (norms) would otherwise see the
        # same normalised input in every variant, and a cached output would pass them all.
        generator = device_generator(_device_of(inputs), seed + 99 + zlib.crc32(variant.encode()))
        return perturb_inputs(problem, inputs, variant, generator)

    return transform


def _device_of(values: list[Any]) -> torch.device:
    return next((v.device for v in values if isinstance(v, torch.Tensor)), torch.device("cpu"))
