"""KernelBench compatibility: load every problem of an unmodified KernelBench checkout, and optionally
evaluate each reference as its own candidate (``--policy off``).

    python benchmarks/kernelbench_compat.py /path/to/KernelBench/KernelBench [--levels 1 2 3] [--eval]

The checkout stays where the user keeps it; nothing of it is copied here. Prints one line per
problem that fails and a summary; writes JSON.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from kernellab.evaluate.options import EvalOptions
from kernellab.evaluate.session import EvalSession
from kernellab.evaluate.verdict import Stage
from kernellab.tasks.load import load_task
from kernellab.tasks.materialize import load_problem
from kernellab.tasks.model import Policy, TaskError

CORRECTNESS = frozenset(Stage) - {Stage.TIMING}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="the KernelBench folder holding level1, level2, ...")
    parser.add_argument("--levels", nargs="+", default=["1", "2", "3"])
    parser.add_argument("--eval", action="store_true", help="also evaluate each reference as its candidate")
    parser.add_argument("--out", default="benchmarks/results/kernelbench_compat.json")
    args = parser.parse_args()
    rows = []
    for level in args.levels:
        for path in sorted((args.root / f"level{level}").glob("*.py")):
            row = {"problem": f"level{level}/{path.name}"}
            started = time.perf_counter()
            try:
                task = load_task(path)
                load_problem(task, task.configs[0]).input_numel()
                row["loaded"] = True
                if args.eval:
                    options = EvalOptions(policy=Policy.OFF, stages=CORRECTNESS, request_timeout_s=600)
                    with EvalSession(task, options) as session:
                        verdict = session.evaluate(path)
                    row.update(status=verdict.status.value, correct=verdict.correct, error=verdict.error)
            except TaskError as exc:
                row.update(loaded=False, error=str(exc))
            row["seconds"] = round(time.perf_counter() - started, 1)
            rows.append(row)
            if not row["loaded"] or (args.eval and row.get("status") != "passed"):
                print(f"{row['problem']:50s} {row.get('status', 'not loaded'):10s} {(row.get('error') or '')[:120]}",
                      flush=True)
    loaded = sum(r["loaded"] for r in rows)
    passed = sum(r.get("status") == "passed" for r in rows)
    print(f"\n{loaded}/{len(rows)} problems loaded" + (f"; {passed} passed eval --policy off" if args.eval else ""))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rows": rows, "loaded": loaded, "passed": passed}, indent=1))


if __name__ == "__main__":
    main()
