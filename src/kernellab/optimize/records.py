"""The records ``optimize`` writes into its output folder, read back by ``apply`` and the report.

```
DIR/
  profile.json        the ranked profile (profile.ModelProfile.to_dict)
  ops.json            one OpRecord per extracted op: its task, its solve, its kernel, its install verdict
  tasks/<slug>/       reference.py + task.toml, a normal task folder
  solves/<slug>/      the solve's folder (trajectory, store, result.json, best_kernel.py)
  kernels/<slug>.py   verified kernels that apply() installs
  verify.json         the end-to-end check: outputs, gradients, timings, memory, what was uninstalled
  report.md, report.html
```
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

OPS_FILE = "ops.json"
PROFILE_FILE = "profile.json"
VERIFY_FILE = "verify.json"


@dataclass
class OpRecord:
    slug: str
    key: str
    kind: str
    spec: dict[str, Any]
    shapes: list[list[int]]
    dtypes: list[str]  # of the chain's inputs
    fixed: list[dict[str, int]]  # per input: dimension -> size the kernel was verified on (JSON keys are strings)
    share: float
    instances: int
    task: str  # folder, relative to DIR
    backward: bool
    template: str | None = None  # a search template that matches the task
    solve_status: str | None = None  # passed | failed | holdout_failed | no_candidate | error | skipped
    solve_note: str = ""
    op_speedup: dict[str, float | None] = field(default_factory=dict)  # the final verdict's vs eager / compile
    kernel: str | None = None  # kernels/<slug>.py when verified
    verified_dtypes: list[str] = field(default_factory=list)
    installed: bool = False
    verdict: str = ""  # why it is (not) installed after the end-to-end check
    uninstalled: bool = False  # the end-to-end check took it out (``verdict`` says why)

    @property
    def installed_candidate(self) -> bool:
        """A verified kernel the end-to-end check has not taken out."""
        return self.kernel is not None and not self.uninstalled

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["fixed"] = [{str(k): v for k, v in f.items()} for f in self.fixed]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> OpRecord:
        d = dict(d)
        d["fixed"] = [{int(k): v for k, v in f.items()} for f in d.get("fixed", [])]
        return cls(**d)


def write_ops(out: Path, ops: list[OpRecord]) -> None:
    (out / OPS_FILE).write_text(json.dumps([o.to_dict() for o in ops], indent=1) + "\n")


def read_ops(out: Path) -> list[OpRecord]:
    path = Path(out) / OPS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{out} holds no {OPS_FILE}: not the output of kernellab optimize")
    return [OpRecord.from_dict(d) for d in json.loads(path.read_text())]


def write_json(path: Path, document: dict[str, Any]) -> None:
    path.write_text(json.dumps(document, indent=1, default=str) + "\n")
