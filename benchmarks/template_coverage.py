"""Which suite tasks the search agent's templates serve, per template and per category.

    python benchmarks/template_coverage.py [--json docs/results/template_coverage.json]

A task is served when a template matches what its reference computes (``kernels.match_templates``);
no kernel runs here, so this needs no GPU and takes seconds.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from kernellab.kernels import match_templates
from kernellab.tasks.catalog import suite_tasks


def coverage() -> dict:
    tasks = suite_tasks()
    by_template: Counter[str] = Counter()
    by_category: dict[str, list[int]] = {}
    served = []
    for task in tasks:
        category = task.id.split("/")[0]
        counts = by_category.setdefault(category, [0, 0])
        counts[1] += 1
        matches = match_templates(task)
        if matches:
            counts[0] += 1
            by_template[matches[0].template.name] += 1
            served.append({"task": task.id, "template": matches[0].template.name})
    return {"tasks": len(tasks), "served": len(served), "by_template": dict(by_template.most_common()),
            "by_category": {c: {"served": s, "tasks": n} for c, (s, n) in sorted(by_category.items())},
            "served_tasks": served}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the table as JSON too")
    args = parser.parse_args()
    result = coverage()
    print(f"templates serve {result['served']} of {result['tasks']} suite tasks")
    for name, n in result["by_template"].items():
        print(f"  {name:<22} {n:>4}")
    print("per category (served / tasks):")
    for category, row in result["by_category"].items():
        print(f"  {category:<22} {row['served']:>4} / {row['tasks']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
