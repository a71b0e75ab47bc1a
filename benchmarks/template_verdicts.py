"""Each served task's template (its first match, at the defaults) through the verifier's correctness
stages and the holdout configs, in every dtype of the task: the check that a template is correct on
every seen and holdout config, which the Triton interpreter can only run on small configs.

    python benchmarks/template_verdicts.py --tasks reductions/var_rows,losses/mse_loss --out verdicts.json

Timing is off (the roofline benchmark times); the JSON is rewritten after every task.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from kernellab.evaluate.options import EvalOptions, with_stages
from kernellab.evaluate.session import EvalSession
from kernellab.evaluate.verdict import Stage
from kernellab.kernels import match_templates
from kernellab.tasks.catalog import suite_tasks
from kernellab.tasks.load import load_task

STAGES = (Stage.SMOKE, Stage.SHAPE_SWEEP, Stage.STABILITY, Stage.DETERMINISM, Stage.EDGE, Stage.BACKWARD,
          Stage.HOLDOUT)


def verdict_of(task_id: str, folder: Path) -> dict:
    task = load_task(task_id)
    matches = match_templates(task)
    if not matches:
        return {"task": task_id, "template": None, "correct": None, "note": "no template serves this task"}
    path = folder / f"{task_id.replace('/', '__')}.py"
    path.write_text(matches[0].render())
    options = with_stages(EvalOptions(time_holdout=False, request_timeout_s=600), *STAGES)
    start = time.perf_counter()
    with EvalSession(task, options) as session:
        verdict = session.evaluate(path)
    return {"task": task_id, "template": matches[0].template.name, "correct": verdict.correct,
            "failed_stage": getattr(verdict.failed_stage, "value", verdict.failed_stage),
            "error": (verdict.error or "")[:400], "violations": [str(v) for v in verdict.violations][:3],
            "passed_stages": [s.name.value for s in verdict.stages if s.passed],
            "seconds": round(time.perf_counter() - start, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", help="comma-separated suite ids (default: every served task)")
    parser.add_argument("--total-time", type=float, default=1200.0, help="start no task after this many s")
    parser.add_argument("--out", type=Path, default=Path("template_verdicts.json"))
    args = parser.parse_args()
    ids = args.tasks.split(",") if args.tasks else [t.id for t in suite_tasks() if match_templates(t)]
    rows: list[dict] = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for task_id in ids:
            if time.perf_counter() - start > args.total_time:
                rows.append({"task": task_id, "correct": None, "note": "not run: --total-time reached"})
                continue
            try:
                row = verdict_of(task_id, Path(tmp))
            except Exception as exc:  # one task's failure to run is that task's row, not the run's end
                row = {"task": task_id, "correct": False, "error": f"{type(exc).__name__}: {exc}"[:400]}
            rows.append(row)
            print(f"{task_id:<40} {row.get('template') or '-':<16} "
                  f"{'pass' if row.get('correct') else 'FAIL' if row.get('correct') is False else '-'} "
                  f"{row.get('failed_stage') or ''} {row.get('error') or ''} {row.get('seconds', '')}", flush=True)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(rows, indent=1) + "\n")
    failed = [r["task"] for r in rows if r.get("correct") is False]
    print(f"{sum(1 for r in rows if r.get('correct'))} of {len(rows)} correct" +
          (f"; failed: {', '.join(failed)}" if failed else ""))


if __name__ == "__main__":
    main()
