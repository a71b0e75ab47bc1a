"""Fault isolation: 20 candidates in one EvalSession, 5 of which crash in different ways.

Every candidate must get a verdict with a reason, the crashed ones must not take the session down,
and the 15 good ones must pass. Prints a table and writes JSON.

    python benchmarks/fault_isolation.py [--out benchmarks/results/fault_isolation.json]

Runs on the GPU when there is one; on the CPU the candidates run under the Triton interpreter and
the illegal-address case (a GPU fault) becomes an out-of-range access of the interpreter.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from faulty_candidates import candidate_source, write_task

from kernellab.evaluate.options import EvalOptions
from kernellab.evaluate.session import EvalSession
from kernellab.tasks.load import load_task
from kernellab.tasks.model import Policy

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/results/fault_isolation.json")
    parser.add_argument("--timeout", type=float, default=20.0, help="per-request timeout (the infinite loop)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="kernellab-faults-"))
    task_dir = write_task(root / "scale", category="elementwise", n="1 << 20", sizes=[1 << 24, 1 << 20, 4096], holdout=4099)
    candidates = []
    fault_slots = {2: "segfault", 6: "illegal_address", 10: "hang", 14: "oom", 18: "os_exit"}
    for i in range(20):
        kind = fault_slots.get(i, "good")
        path = root / f"candidate_{i:02d}_{kind}.py"
        path.write_text(candidate_source(kind))
        candidates.append((kind, path))
    # Policy off: the static scan would reject ctypes and os._exit before they run, and this
    # benchmark is about what the sandbox does when they do run.
    # Short timing and no compile baseline: what is measured here is isolation, not speed.
    options = EvalOptions(request_timeout_s=args.timeout, configs="all", policy=Policy.OFF, timing_budget_s=0.1,
                          compile_baseline=False, time_holdout=False, sanitize=False)
    rows = []
    started = time.perf_counter()
    with EvalSession(load_task(task_dir), options) as session:
        for kind, path in candidates:
            verdict = session.evaluate(path)
            rows.append({"candidate": path.name, "kind": kind, "status": verdict.status.value,
                         "correct": verdict.correct, "failed_stage": verdict.failed_stage.value
                         if verdict.failed_stage else None, "error": verdict.error,
                         "violations": sorted(verdict.violation_kinds()), "elapsed_s": round(verdict.elapsed_s, 2)})
            print(f"{path.name:34s} {verdict.status.value:9s} {str(verdict.correct):5s} "
                  f"{(verdict.error or '')[:90]}", flush=True)
    total = time.perf_counter() - started
    good = [r for r in rows if r["kind"] == "good"]
    bad = [r for r in rows if r["kind"] != "good"]
    summary = {"verdicts": len(rows), "good_passed": sum(r["correct"] for r in good), "good": len(good),
               "faulty_rejected": sum(not r["correct"] for r in bad), "faulty": len(bad),
               "total_s": round(total, 1), "device": session.device_label, "rows": rows}
    print(f"\n{summary['verdicts']} verdicts in one session ({total:.1f} s): "
          f"{summary['good_passed']}/{summary['good']} good passed, "
          f"{summary['faulty_rejected']}/{summary['faulty']} faulty rejected with a reason")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
