"""task.toml as a typed record: unknown keys refused, every suite task written by tomli-w and read
back to the same record and the same task."""

from __future__ import annotations

import tomllib

import pytest

from kernellab.agents.workspace import write_task_folder
from kernellab.tasks.catalog import suite_tasks
from kernellab.tasks.load import load_task
from kernellab.tasks.model import TaskError
from kernellab.tasks.toml_schema import OutputTable, TaskToml

GOOD = {"schema": 1, "category": "normalization", "dtypes": ["float32"], "tolerance_factor": 4,
        "outputs": [{"compare": "allclose", "ulp": 2}], "configs": [{"M": 8}]}


def test_a_table_parses_into_typed_fields():
    spec = TaskToml.parse(GOOD, "task.toml")
    assert spec.outputs == [OutputTable(compare="allclose", ulp=2)] and spec.tolerance_factor == 4
    assert spec.holdout == [] and spec.policy == "strict"


@pytest.mark.parametrize("change, message", [
    ({"holdouts": [{"M": 3}]}, "unknown key 'holdouts'"),
    ({"outputs": [{"compare": "allclose", "atool": 1e-3}]}, "outputs[0]: unknown key 'atool'"),
    ({"outputs": [{"compare": "fixed", "atol": "1e-3"}]}, "outputs[0].atol has the wrong type"),
    ({"outputs": [{"ulp": "2"}]}, "outputs[0].ulp has the wrong type"),
    ({"backward": 1}, "backward has the wrong type"),
    ({"tolerance_factor": True}, "tolerance_factor has the wrong type"),
    ({"dtypes": ["float32", 16]}, "dtypes has the wrong type"),
    ({"configs": [3]}, "configs has the wrong type"),
    ({"schema": 2}, "schema 2 is not supported"),
])
def test_bad_tables_are_one_line_naming_the_key(change, message):
    with pytest.raises(TaskError) as err:
        TaskToml.parse({**GOOD, **change}, "task.toml")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_missing_required_key_is_named():
    with pytest.raises(TaskError, match="missing required key 'category'"):
        TaskToml.parse({"schema": 1}, "task.toml")


def test_every_suite_task_round_trips_through_the_written_toml(tmp_path):
    for i, task in enumerate(suite_tasks()):
        spec = TaskToml.of(task)
        assert TaskToml.parse(tomllib.loads(spec.to_toml("a header")), "x") == spec, task.id
        folder = write_task_folder(task, tmp_path / str(i))
        assert load_task(folder).sha256 == task.sha256, task.id


def test_fixed_thresholds_and_keep_init_round_trip_through_the_written_toml():
    """A suite's own thresholds (a number, or a table by dtype) and named weights that keep their
    initialisation are task.toml keys like any other: read typed, written back the same."""
    data = {**GOOD, "keep_init": ["norm.weight"],
            "outputs": [{"compare": "fixed", "atol": 1e-3, "rtol": {"float16": 1e-2, "*": 1e-4}}]}
    spec = TaskToml.parse(data, "task.toml")
    assert spec.keep_init == ["norm.weight"] and spec.outputs[0].rtol == {"float16": 1e-2, "*": 1e-4}
    assert TaskToml.parse(tomllib.loads(spec.to_toml()), "x") == spec
