"""``kernellab tasks import SUITE PATH --out DIR``: other benchmarks' tasks as ordinary task folders.

Each importer reads a local checkout of its suite (kernellab never fetches one) and writes one folder
per task it can represent; the summary says what was imported and, for the rest, why not.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from kernellab.tasks.importers.common import ImportSummary, git_commit

SUITES = {
    "kernelbench-x": "kernellab.tasks.importers.kernelbench_x",
    "agentkernelarena": "kernellab.tasks.importers.agentkernelarena",
    "robust-kbench": "kernellab.tasks.importers.robust_kbench",
    "gpumode": "kernellab.tasks.importers.gpumode",
}


def import_suite(suite: str, checkout: Path, out: Path, only: str | None = None) -> ImportSummary:
    """Import every task of ``suite`` found under ``checkout`` into ``out`` (``only``: tasks whose
    path contains this text). Raises ``KeyError`` for an unknown suite and ``FileNotFoundError`` when
    ``checkout`` does not look like the suite."""
    module = importlib.import_module(SUITES[suite])
    checkout = checkout.resolve()
    out.mkdir(parents=True, exist_ok=True)
    summary = ImportSummary(suite=suite, checkout=str(checkout), out=str(out.resolve()), commit=git_commit(checkout))
    module.import_suite(checkout, out, summary, only)
    return summary
