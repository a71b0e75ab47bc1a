"""Parametric kernel templates: the registry, the match record, and the parts every rendered file shares.

A template is registered with ``@register_template("name")``. ``matches(task, reference_source)``
reads the reference (``reference_model.read_model``) and returns a ``Match`` when the template can
implement it: the same ``__init__`` (copied verbatim from the reference, so parameter names and the
constructor signature agree), the same forward arguments, the same outputs. ``Match.render(params)``
gives a complete candidate file.

Tunable values are module-level constants written ``NAME = value  # knob: lo..hi`` (powers of two
between) or ``# knob: 1,2,4,8`` (an explicit list); the search agent's launch-parameter finder reads
those comments, so a rendered template is tuned exactly like any other kernel file.
"""

from __future__ import annotations

import abc
import textwrap
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, ClassVar

from kernellab.kernels.reference_model import ReferenceModel, read_model
from kernellab.registry import Registry
from kernellab.tasks.model import Task

HEADER_IMPORTS = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"


@dataclass(frozen=True)
class KnobSpec:
    """A module-level constant of a rendered file, its default and the values the search may try."""

    name: str
    default: int
    domain: str  # "16..8192" (powers of two) or "1,2,4,8"
    why: str  # what it controls, written next to the constant

    def line(self, value: int | None = None) -> str:
        return f"{self.name} = {self.default if value is None else value}  # knob: {self.domain}. {self.why}"


@dataclass
class Match:
    """A template that fits a task, with what it learned from the reference."""

    template: Template
    task: Task
    model: ReferenceModel
    spec: dict[str, Any] = field(default_factory=dict)
    summary: str = ""  # e.g. "gelu(tanh)(x + bias), forward + backward"

    def render(self, params: dict[str, int] | None = None) -> str:
        unknown = set(params or {}) - {k.name for k in self.template.knobs(self)}
        if unknown:
            raise ValueError(f"template {self.template.name}: unknown parameters {sorted(unknown)}")
        return self.template.render(self, dict(params or {}))

    def presets(self) -> list[dict[str, int]]:
        """Parameter sets worth trying first: the defaults, then the template's alternatives."""
        return [{}] + [p for p in self.template.presets(self) if p]


class Template(abc.ABC):
    name: ClassVar[str] = ""
    categories: ClassVar[frozenset[str]] = frozenset()  # task categories it is written for
    budget: ClassVar[str] = ""  # bytes moved and FLOPs per call, for a reader checking % of roofline

    def matches(self, task: Task, reference_source: str | None = None) -> Match | None:
        """A ``Match`` when this template implements the task's reference, else ``None``."""
        if not self.written_for(task):
            return None
        model = _read(reference_source if reference_source is not None else task.source)
        if model is None or model.outputs is None:
            return None
        return self.match(task, model)

    def written_for(self, task: Task) -> bool:
        """Whether the task's category lets this template try it: its own categories, or any category
        that is not the suite's (``suite_categories``)."""
        return not self.categories or task.category in self.categories or task.category not in suite_categories()

    @abc.abstractmethod
    def match(self, task: Task, model: ReferenceModel) -> Match | None:
        """The template's own check on a readable reference."""

    @abc.abstractmethod
    def knobs(self, match: Match) -> list[KnobSpec]:
        """The module-level constants a rendered file exposes to tuning."""

    @abc.abstractmethod
    def render(self, match: Match, params: dict[str, int]) -> str:
        """A complete candidate file (``params`` override knob defaults)."""

    def presets(self, match: Match) -> list[dict[str, int]]:
        return []


@lru_cache(maxsize=1)
def suite_categories() -> frozenset[str]:
    """The suite's own categories, which templates name. A task of any other category (a bare
    KernelBench file, an imported suite's "Activation" or "pmpp", a folder without one) is matched
    on its reference alone."""
    from kernellab.tasks.load import SUITE_ROOT

    return frozenset(p.name for p in SUITE_ROOT.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))

# Templates are stateless: the registry keeps one instance of each.
TEMPLATES: Registry[Template, Template] = Registry("template", "kernellab.kernels", make=lambda cls: cls())
register_template = TEMPLATES.register


def templates() -> dict[str, Template]:
    """Every registered template, by name (importing ``kernellab.kernels`` registers the built-in ones)."""
    return TEMPLATES.entries()


def match_templates(task: Task, reference_source: str | None = None) -> list[Match]:
    """Every template that implements ``task``, in registry order."""
    found = []
    for template in templates().values():
        match = template.matches(task, reference_source)
        if match is not None:
            found.append(match)
    return found


@lru_cache(maxsize=64)
def _read(source: str) -> ReferenceModel | None:
    return read_model(source)


# ------------------------------------------------------------------------------------ rendering parts


def knob_values(match: Match, params: dict[str, int]) -> dict[str, int]:
    return {k.name: params.get(k.name, k.default) for k in match.template.knobs(match)}


def knob_block(match: Match, params: dict[str, int]) -> str:
    values = knob_values(match, params)
    return "\n".join(k.line(values[k.name]) for k in match.template.knobs(match)) + "\n"


def model_class(model: ReferenceModel, forward_body: str) -> str:
    """``class ModelNew`` with the reference's ``__init__`` verbatim and ``forward_body`` as forward."""
    args = ", ".join(["self", *model.forward_args])
    init = textwrap.indent(model.init_source, "    ")
    body = textwrap.indent(textwrap.dedent(forward_body).strip("\n"), "        ")
    return f"class ModelNew(nn.Module):\n{init}\n\n    def forward({args}):\n{body}\n"


def assemble(doc: str, match: Match, params: dict[str, int], kernels: str, host: str, forward_body: str,
             imports: str = "") -> str:
    """A whole candidate file: docstring, imports, knobs, kernels, host code, ModelNew."""
    prelude = "\n".join(match.model.init_prelude)
    init = match.model.init_source + prelude
    extra = "".join(line for name, line in (("math.", "import math\n"), ("F.", "import torch.nn.functional as F\n"))
                    if name in init and line not in imports)  # what the copied __init__ may use
    parts = [f'"""{doc.strip()}\n"""\n', extra + imports + HEADER_IMPORTS, knob_block(match, params)]
    if prelude:
        parts.append(prelude + "\n")
    parts += [kernels.strip("\n") + "\n", host.strip("\n") + "\n", model_class(match.model, forward_body)]
    return _top_level_spacing("\n\n".join(p.rstrip("\n") for p in parts) + "\n")


def _top_level_spacing(text: str) -> str:
    """Two blank lines before every top-level definition (PEP 8), whatever the snippets had."""
    out: list[str] = []
    for line in text.split("\n"):
        top = line.startswith(("@", "def ", "class "))
        if top and not (out and out[-1].startswith("@")):
            while out and not out[-1].strip():
                out.pop()
            if out:
                out += ["", ""]
        out.append(line)
    return "\n".join(out)


COLUMN_SUM = '''
@triton.jit
def _column_sum_kernel(part_ptr, out_ptr, groups, n_cols, BLOCK: tl.constexpr):
    # reads groups * n_cols fp32 partials, writes n_cols: a deterministic sum, no atomics
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for g in range(0, groups):
        acc += tl.load(part_ptr + g * n_cols + cols, mask=mask, other=0.0)
    tl.store(out_ptr + cols, acc.to(out_ptr.dtype.element_ty), mask=mask)
'''

def autograd_op(tensors: list[str], host_scalars: str, scalars: list[str]) -> str:
    """``_Op``, the autograd function of a rendered file whose ``_forward(tensors..., scalars...)``
    and ``_backward(dy, tensors..., scalars...)`` take the same tensors and scalars: it saves the
    tensors, keeps the scalars, and hands ``_backward`` both (the elementwise and gated templates)."""
    names = ", ".join(tensors)
    return f'''

class _Op(torch.autograd.Function):
    @staticmethod
    def forward(ctx, {names}{host_scalars}):
        ctx.save_for_backward({names})
        ctx.scalars = ({"".join(s + ", " for s in scalars)})
        return _forward({names}{host_scalars})

    @staticmethod
    def backward(ctx, dy):
        return _backward(dy, *ctx.saved_tensors, *ctx.scalars)
'''


COLUMN_SUM_HOST = '''
def _column_sum(part, out):
    groups, n_cols = part.shape
    if n_cols:
        _column_sum_kernel[(triton.cdiv(n_cols, 256),)](part, out, groups, n_cols, BLOCK=256)
    return out
'''
