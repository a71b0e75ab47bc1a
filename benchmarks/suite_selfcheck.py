"""The suite checks itself: every task's reference evaluated as its own candidate (policy off), and
every baseline kernel evaluated with the task's own policy.

    python benchmarks/suite_selfcheck.py [--category C] [--shard i/n] [--resume] [--out benchmarks/results/suite_selfcheck.json]

On the CPU this runs the small configs (and what else fits) under the Triton interpreter; CUDA C++
baselines are compile-checked (needs_gpu). On a GPU every config runs, correctness only (no timing).
Prints one line per evaluation and writes JSON after each (a run cut short keeps what it did);
``--resume`` skips the evaluations that came out as expected in ``--out`` for the same task files
(``sha256``). Exits 1 if anything that should pass did not.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from kernellab.evaluate.options import EvalOptions
from kernellab.evaluate.session import EvalSession
from kernellab.evaluate.validate import shard
from kernellab.evaluate.verdict import Stage
from kernellab.tasks.catalog import suite_tasks
from kernellab.tasks.model import Policy

CORRECTNESS = frozenset(Stage) - {Stage.TIMING}
ACCEPTABLE = {"passed", "needs_gpu", "unsupported_in_interpreter"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--category", action="append")
    parser.add_argument("--shard")
    parser.add_argument("--cpu-max-elements", type=int, default=4096,
                        help="under the interpreter, configs above this size are skipped (small ones always run)")
    parser.add_argument("--out", default="benchmarks/results/suite_selfcheck.json")
    parser.add_argument("--resume", action="store_true", help="skip evaluations already as expected in --out")
    args = parser.parse_args()
    tasks = shard([t for t in suite_tasks() if not args.category or t.category in args.category], args.shard)
    out = Path(args.out)
    done = _previous(out) if args.resume else {}
    rows, bad = [], 0
    for task in tasks:
        jobs = [("reference", task.root / "reference.py", Policy.OFF)]
        if task.baseline_source:
            jobs.append((f"baseline ({task.baseline_backend})", task.root / "baseline.py", None))
        for what, path, policy in jobs:
            if (task.id, what, task.sha256) in done:
                rows.append(done[task.id, what, task.sha256])
                continue
            options = EvalOptions(policy=policy, stages=CORRECTNESS, time_holdout=False, request_timeout_s=300,
                                  cpu_max_elements=args.cpu_max_elements)
            started = time.perf_counter()
            with EvalSession(task, options) as session:
                verdict = session.evaluate(path)
            ok = verdict.status.value in ACCEPTABLE and (verdict.correct or verdict.status.value != "passed") \
                and (verdict.compiled or verdict.status.value == "unsupported_in_interpreter")
            bad += not ok
            rows.append({"task": task.id, "what": what, "sha256": task.sha256, "status": verdict.status.value,
                         "correct": verdict.correct, "compiled": verdict.compiled,
                         "holdout": verdict.holdout.correct, "error": verdict.error, "ok": ok,
                         "seconds": round(time.perf_counter() - started, 1)})
            print(f"{'ok ' if ok else 'BAD'} {task.id:45s} {what:18s} {verdict.status.value:26s} "
                  f"{(verdict.error or '')[:100]}", flush=True)
            _write(out, rows, bad)
    resumed = sum(1 for r in rows if r.get("resumed"))
    print(f"\n{len(rows) - bad}/{len(rows)} evaluations as expected ({resumed} from an earlier run)")
    _write(out, rows, bad)
    raise SystemExit(1 if bad else 0)


def _previous(out: Path) -> dict[tuple[str, str, str], dict]:
    if not out.is_file():
        return {}
    rows = json.loads(out.read_text()).get("rows", [])
    return {(r["task"], r["what"], r.get("sha256")): dict(r, resumed=True) for r in rows if r.get("ok")}


def _write(out: Path, rows: list[dict], bad: int) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rows": rows, "bad": bad}, indent=1))


if __name__ == "__main__":
    main()
