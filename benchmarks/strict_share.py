"""The strict rule's share over the suite's baseline kernels: in each traced call, the share of the
candidate's own kernels in own + torch data-movement GPU time (``policy.MIN_STRICT_OWN_SHARE`` is
the least a strict task accepts). The lowest share a legitimate baseline shows says how much room
the threshold leaves.

    python benchmarks/strict_share.py [--category C] [--shard i/n] [--out benchmarks/results/strict_share.json]

GPU only (the share is of GPU time). Correctness stages only, seen and edge configs, every traced
call; prints one line per baseline (its lowest share and where) and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
from pathlib import Path

import torch

from kernellab.evaluate.options import EvalOptions
from kernellab.evaluate.policy import MIN_STRICT_OWN_SHARE
from kernellab.evaluate.session import EvalSession
from kernellab.evaluate.validate import shard
from kernellab.evaluate.verdict import Stage
from kernellab.tasks.catalog import suite_tasks
from kernellab.tasks.model import Policy

STAGES = frozenset(Stage) - {Stage.TIMING, Stage.HOLDOUT}
_SHARE = re.compile(r"strict share ([0-9.]+) at (.*)")


class _Shares(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.seen: list[tuple[float, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        m = _SHARE.match(record.getMessage())
        if m:
            self.seen.append((float(m.group(1)), m.group(2)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--category", action="append")
    parser.add_argument("--shard")
    parser.add_argument("--out", default="benchmarks/results/strict_share.json")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("strict_share.py needs a GPU: the share is of GPU time")
    shares = _Shares()
    logger = logging.getLogger("kernellab.evaluate.policy_evidence")
    logger.setLevel(logging.DEBUG)
    logger.addHandler(shares)
    tasks = shard([t for t in suite_tasks() if t.baseline_source and t.policy is Policy.STRICT
                   and (not args.category or t.category in args.category)], args.shard)
    rows = []
    for task in tasks:
        shares.seen.clear()
        options = EvalOptions(stages=STAGES, configs="seen", time_holdout=False, request_timeout_s=300,
                              compile_baseline=False)
        with EvalSession(task, options) as session:
            verdict = session.evaluate(task.root / "baseline.py")
        low = min(shares.seen, default=(None, None))
        rows.append({"task": task.id, "status": verdict.status.value, "traced_calls": len(shares.seen),
                     "lowest_share": low[0], "where": low[1],
                     "violations": [v.detail for v in verdict.violations][:3]})
        share = "-" if low[0] is None else f"{low[0]:.3f}"
        print(f"{task.id:40s} {verdict.status.value:8s} lowest own share {share:>6s} of {len(shares.seen)} "
              f"traced calls {low[1] or ''}", flush=True)
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"threshold": MIN_STRICT_OWN_SHARE, "rows": rows}, indent=1))
    judged = [r["lowest_share"] for r in rows if r["lowest_share"] is not None]
    if judged:
        print(f"lowest over {len(judged)} baselines: {min(judged):.3f} (threshold {MIN_STRICT_OWN_SHARE})")


if __name__ == "__main__":
    main()
