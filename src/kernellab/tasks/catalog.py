"""The built-in suite as an inventory: discovery and one summary record per task."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernellab.tasks.load import SUITE_ROOT, load_task
from kernellab.tasks.model import Task, Visibility


def suite_task_dirs() -> list[Path]:
    """Every task folder of the built-in suite (``<category>/<name>/reference.py``): the one listing
    of the suite that ``tasks list``, ``tasks validate`` and ``run --tasks suite`` share."""
    return sorted(p.parent for p in SUITE_ROOT.glob("*/*/reference.py"))


def suite_id(folder: Path) -> str:
    """The id of a suite task folder (``category/name``)."""
    return f"{folder.parent.name}/{folder.name}"


def suite_tasks() -> list[Task]:
    return [load_task(d) for d in suite_task_dirs()]


def task_summary(task: Task) -> dict[str, Any]:
    return {"id": task.id, "category": task.category, "description": task.description, "dtypes": list(task.dtypes),
            "backward": task.backward, "baseline_language": task.baseline_language, "policy": task.policy.value,
            "configs": [c.as_dict() for c in task.configs_of(Visibility.SEEN)],
            "edge": [c.as_dict() for c in task.configs_of(Visibility.EDGE)],
            "holdout": [c.as_dict() for c in task.configs_of(Visibility.HOLDOUT)],
            "small": [c.as_dict() for c in task.configs_of(Visibility.SMALL)]}
