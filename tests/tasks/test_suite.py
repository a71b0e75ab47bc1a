"""The built-in task suite (``kernellab/tasks/suite``): every task is usable as shipped.

For each ``<category>/<name>`` folder: the loader accepts it; it has the config classes the suite
promises (at least 3 seen, 2 edge and 6 holdout configs, exactly one small config, holdouts unlike any
seen or edge config); the names in ``task.toml`` refer to real inputs and parameters; its roofline
formulas evaluate at every config; and the reference runs on the small config on the CPU in float32
and float64 with finite outputs, and backward where the task declares it.
"""

from __future__ import annotations

import functools
from collections import Counter

import pytest
import torch

from kernellab.tasks.load import SUITE_ROOT, load_task
from kernellab.tasks.materialize import Problem, build_model, cast_model, load_problem
from kernellab.tasks.model import Task, TaskError, Visibility
from kernellab.tasks.module import module_constants

MIN_SEEN, MIN_EDGE, MIN_HOLDOUT = 3, 2, 6
MIN_TASKS_PER_CATEGORY = 8
SEED = 0


def _suite_ids() -> list[str]:
    if not SUITE_ROOT.is_dir():
        return []
    return sorted(p.parent.relative_to(SUITE_ROOT).as_posix() for p in SUITE_ROOT.glob("*/*/reference.py"))


TASK_IDS = _suite_ids()


@functools.cache
def _task(task_id: str) -> Task:
    return load_task(task_id)


def _small_problem(task: Task) -> Problem:
    (small,) = task.configs_of(Visibility.SMALL)
    return load_problem(task, small)


def _outputs(result) -> tuple:
    if result is None:
        return ()
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def _run(task: Task, dtype: str, *, grad: bool = False):
    problem = _small_problem(task)
    model = cast_model(build_model(problem.module.Model, problem.init_inputs(), SEED), dtype, task.keep_dtype, "cpu")
    inputs = problem.inputs(SEED, "cpu", dtype)
    if grad:
        by_name = dict(zip(problem.input_names, inputs))
        for name in task.grad_inputs:
            by_name[name].requires_grad_(True)
        return model, by_name, _outputs(model(*inputs))
    with torch.no_grad():
        return model, dict(zip(problem.input_names, inputs)), _outputs(model(*inputs))


def test_suite_is_not_empty():
    assert TASK_IDS, f"no tasks under {SUITE_ROOT}"


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_task_loads_with_its_config_classes(task_id):
    task = _task(task_id)
    category = task_id.split("/")[0]
    assert task.category == category, f"category {task.category!r} but the folder is {category!r}"
    assert task.description.strip(), "task.toml needs a description"
    seen = task.configs_of(Visibility.SEEN)
    edge = task.configs_of(Visibility.EDGE)
    holdout = task.configs_of(Visibility.HOLDOUT)
    assert len(seen) >= MIN_SEEN and all(c.values for c in seen), "needs >= 3 explicit seen configs"
    assert len(edge) >= MIN_EDGE, "needs >= 2 edge configs"
    assert len(holdout) >= MIN_HOLDOUT, "needs >= 6 holdout configs"
    assert len(task.configs_of(Visibility.SMALL)) == 1, "needs exactly one small config"
    shown = {tuple(sorted(c.values)) for c in seen + edge}
    leaked = [c.label for c in holdout if tuple(sorted(c.values)) in shown]
    assert not leaked, f"holdout configs also listed as seen or edge: {leaked}"
    assert len({c.label for c in holdout}) == len(holdout), "duplicate holdout configs"


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_task_names_refer_to_inputs_and_parameters(task_id):
    task = _task(task_id)
    problem = _small_problem(task)
    inputs = set(problem.input_names)
    assert len(problem.input_names) == len(problem.inputs(SEED, "cpu", "float32")), \
        "get_inputs() must return one value per forward() argument"
    model = build_model(problem.module.Model, problem.init_inputs(), SEED)
    state = {name.split(".")[-1] for name, _ in [*model.named_parameters(), *model.named_buffers()]}
    for key, names in (("grad_inputs", task.grad_inputs), ("mutates", task.mutates),
                       ("input_domain", [name for name, _ in task.input_domain]),
                       ("outputs.of", [spec.of for spec in task.outputs if spec.of])):
        unknown = set(names) - inputs
        assert not unknown, f"{key} names {sorted(unknown)}, not arguments of forward {sorted(inputs)}"
    unknown = set(task.keep_dtype) - inputs - state
    assert not unknown, f"keep_dtype names {sorted(unknown)}, neither inputs nor parameters/buffers"


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_roofline_formulas_evaluate_at_every_config(task_id):
    roofline = pytest.importorskip("kernellab.evaluate.roofline")
    task = _task(task_id)
    formulas = [f for f in (task.bytes_formula, task.flops_formula) if f]
    if not formulas:
        return
    constants = module_constants(task.source)
    for config in task.configs:
        for formula in formulas:
            for elem in (2, 4):
                value = roofline.evaluate_formula(formula, {**constants, **config.as_dict()}, elem)
                assert value > 0, f"{formula!r} is {value} at {config.label}"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("task_id", TASK_IDS)
def test_reference_runs_on_small_config(task_id, dtype):
    task = _task(task_id)
    _, inputs, outputs = _run(task, dtype)
    # An in-place op may return nothing: the inputs it declares in `mutates` are its results.
    results = {f"output {i}": o for i, o in enumerate(outputs) if isinstance(o, torch.Tensor)}
    results.update({f"mutated input {name!r}": inputs[name] for name in task.mutates})
    assert results, "the reference returned no tensor and mutates no input"
    for what, out in results.items():
        values = out.float() if out.is_floating_point() and out.element_size() == 1 else out  # float8
        assert bool(torch.isfinite(values).all()), f"{what} has non-finite values in {dtype}"


def _declares_backward(task_id: str) -> bool:
    try:
        return _task(task_id).backward
    except TaskError:  # a task that does not load fails its own loading test; keep it visible here too
        return True


@pytest.mark.parametrize("task_id", [t for t in TASK_IDS if _declares_backward(t)])
def test_reference_backward_on_small_config(task_id):
    task = _task(task_id)
    model, inputs, outputs = _run(task, "float32", grad=True)
    differentiable = [o for o in outputs if isinstance(o, torch.Tensor) and o.requires_grad]
    assert differentiable, "backward = true but no output depends on a grad input or parameter"
    generator = torch.Generator().manual_seed(SEED)
    grads = [torch.randn(o.shape, generator=generator, dtype=o.dtype) for o in differentiable]
    torch.autograd.backward(differentiable, grads)
    for name in task.grad_inputs:
        grad = inputs[name].grad
        assert grad is not None, f"no gradient for input {name!r}"
        assert bool(torch.isfinite(grad).all()), f"non-finite gradient for input {name!r}"
    for name, param in model.named_parameters():
        if param.requires_grad:
            assert param.grad is not None, f"no gradient for parameter {name!r}"
            assert bool(torch.isfinite(param.grad).all()), f"non-finite gradient for parameter {name!r}"


def test_every_category_has_enough_tasks():
    counts = Counter(task_id.split("/")[0] for task_id in TASK_IDS)
    small = {category: n for category, n in counts.items() if n < MIN_TASKS_PER_CATEGORY}
    assert not small, f"categories with fewer than {MIN_TASKS_PER_CATEGORY} tasks: {small}"
