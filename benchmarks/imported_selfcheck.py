"""Imported tasks checked: `tasks validate`, each reference as its own candidate (policy off), and the
suite's own kernels (``baseline.py``) with the task's policy, timed on a GPU.

    python benchmarks/imported_selfcheck.py DIR [--sample N] [--what validate,reference,baseline]
        [--timing] [--only TEXT] [--cpu-max-elements N] [--budget-s S] [--out results.json]

DIR is an importer's ``--out`` folder. ``--sample N`` takes every k-th task (sorted by path) so that N
are checked; ``--budget-s`` stops starting new evaluations after that many seconds. One line per
evaluation; JSON after each (counts by status, speedups vs eager of passing baselines, their
geometric mean).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

from kernellab.evaluate.options import EvalOptions
from kernellab.evaluate.session import EvalSession
from kernellab.evaluate.validate import validate_task
from kernellab.evaluate.verdict import Stage
from kernellab.tasks.load import load_task
from kernellab.tasks.model import Policy, TaskError

CORRECTNESS = frozenset(Stage) - {Stage.TIMING}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--sample", type=int, default=0, help="check about this many tasks (0: all)")
    parser.add_argument("--what", default="validate,reference", help="validate, reference, baseline")
    parser.add_argument("--timing", action="store_true", help="time baselines (GPU): speedup vs eager")
    parser.add_argument("--device", default=None)
    parser.add_argument("--cpu-max-elements", type=int, default=1 << 16)
    parser.add_argument("--budget-s", type=float, default=0.0)
    parser.add_argument("--only", default=None, help="only tasks whose folder path contains this")
    parser.add_argument("--out", type=Path, default=Path("imported_selfcheck.json"))
    args = parser.parse_args()
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    folders = sorted(p.parent for p in args.root.rglob("reference.py") if not args.only or args.only in str(p.parent))
    if args.sample and len(folders) > args.sample:
        step = len(folders) / args.sample
        folders = [folders[int(i * step)] for i in range(args.sample)]
    what = set(args.what.split(","))
    rows: list[dict] = []
    started = time.perf_counter()
    for folder in folders:
        if args.budget_s and time.perf_counter() - started > args.budget_s:
            rows.append({"task": str(folder.relative_to(args.root)), "what": "-", "status": "not_run_budget"})
            continue
        rel = str(folder.relative_to(args.root))
        try:
            task = load_task(folder)
        except TaskError as exc:
            rows.append({"task": rel, "what": "load", "status": "load_error", "error": str(exc)})
            _write(args.out, rows, device)
            continue
        if "validate" in what:
            t0 = time.perf_counter()
            try:
                report = validate_task(task, device, None if device == "cuda" else args.cpu_max_elements)
                row = {"task": rel, "what": "validate", "status": "valid" if report.passed else "invalid",
                       "configs": len(report.checked_configs), "too_large": len(report.skipped_configs),
                       "error": "; ".join(report.failures)[:400] or None}
            except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
                row = {"task": rel, "what": "validate", "status": "validator_error", "error": f"{type(exc).__name__}: {exc}"[:400]}
            row["seconds"] = round(time.perf_counter() - t0, 1)
            rows.append(row)
            _print(row)
        jobs = []
        if "reference" in what:
            jobs.append(("reference", folder / "reference.py", Policy.OFF))
        if "baseline" in what and task.baseline_source:
            jobs.append(("baseline", folder / "baseline.py", None))
        for label, path, policy in jobs:
            stages = frozenset(Stage) if args.timing and label == "baseline" else CORRECTNESS
            options = EvalOptions(policy=policy, stages=stages, time_holdout=False, request_timeout_s=300,
                                  device=device, cpu_max_elements=args.cpu_max_elements, sanitize=False,
                                  compile_baseline=False)
            t0 = time.perf_counter()
            try:
                with EvalSession(task, options) as session:
                    verdict = session.evaluate(path)
                row = {"task": rel, "what": label, "status": verdict.status.value, "correct": verdict.correct,
                       "holdout": verdict.holdout.correct, "error": (verdict.error or "")[:400] or None,
                       "speedup_vs_eager": verdict.speedup.get("vs_eager")}
            except Exception as exc:  # noqa: BLE001
                row = {"task": rel, "what": label, "status": "evaluator_exception", "error": f"{type(exc).__name__}: {exc}"[:400]}
            row["seconds"] = round(time.perf_counter() - t0, 1)
            rows.append(row)
            _print(row)
            _write(args.out, rows, device)
        _write(args.out, rows, device)
    _write(args.out, rows, device)
    print(json.dumps(_summary(rows), indent=1))


def _print(row: dict) -> None:
    print(f"{row['task'][:60]:60s} {row['what']:9s} {row['status']:26s} {(row.get('error') or '')[:110]}", flush=True)


def _summary(rows: list[dict]) -> dict:
    out: dict = {}
    for row in rows:
        counts = out.setdefault(row["what"], {})
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    speedups = [r["speedup_vs_eager"] for r in rows if r["what"] == "baseline" and r.get("status") == "passed"
                and r.get("speedup_vs_eager")]
    if speedups:
        out["baseline_speedup_vs_eager"] = {"n": len(speedups), "geomean": math.exp(sum(map(math.log, speedups)) / len(speedups)),
                                            "min": min(speedups), "max": max(speedups)}
    return out


def _write(out: Path, rows: list[dict], device: str) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"device": device, "summary": _summary(rows), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
