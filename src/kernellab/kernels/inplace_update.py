"""In-place elementwise updates: a forward that returns nothing and updates some of its arguments in
place with elementwise chains of its arguments and number attributes, which is what an optimizer step
is (SGD with momentum, Adam/AdamW, Adagrad, RMSprop, Lion, an EMA, master weights copied back). The
reader gives each updated argument's final value (``ReferenceModel.mutations``); one kernel computes
every update from the values it loads once and stores each updated argument once, in its own dtype.

Numbers that depend on attributes only (``1 - beta1 ** step``, ``lr / bias_correction1``,
``math.sqrt(bias_correction2)``) are computed on the host in double precision, as eager PyTorch does
with Python scalars, and passed to the kernel.

Budget per call, ``E`` elements, ``I`` arguments read, ``U`` arguments updated, ``f`` FLOPs per element:
  forward   reads I·E·elem once, writes U·E·elem once; f·E FLOPs.
"""

from __future__ import annotations

from kernellab.kernels.elementwise import kernel_leaf, leaves_of
from kernellab.kernels.reference_model import Node, ReferenceModel
from kernellab.kernels.template import (
    KnobSpec,
    Match,
    Template,
    _read,
    assemble,
    register_template,
)
from kernellab.kernels.triton_expr import TritonExpr, flops_per_element, helper_source, is_elementwise
from kernellab.tasks.model import Task

KNOBS = [
    KnobSpec("BLOCK", 1024, "256..8192", "elements per program"),
    KnobSpec("NUM_WARPS", 4, "1,2,4,8,16", "warps per program"),
]
_HOST_OPS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**"}
_HOST_FUNCTIONS = ("sqrt", "log", "exp", "tanh")


def _host(node: Node) -> str | None:
    """A Python expression for a tree of number attributes and constants, or None when it is not one."""
    if node.op == "const" and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return repr(float(node.value))
    if node.op == "scalar":
        return f"float(self.{node.name})"
    if node.kw:
        return None
    parts = [_host(a) for a in node.args]
    if any(p is None for p in parts):
        return None
    if node.op in _HOST_OPS and len(parts) == 2:
        return f"({parts[0]} {_HOST_OPS[node.op]} {parts[1]})"
    if node.op == "neg" and len(parts) == 1:
        return f"(-{parts[0]})"
    if node.op in _HOST_FUNCTIONS and len(parts) == 1:
        return f"math.{node.op}({parts[0]})"
    return None


class _HostNumbers:
    """Replaces every largest subtree of numbers that holds an attribute by a kernel scalar ``h<i>``."""

    def __init__(self) -> None:
        self.exprs: dict[str, str] = {}  # kernel scalar name -> Python expression on the host
        self._names: dict[str, str] = {}

    def fold(self, node: Node) -> Node:
        if node.op in ("const", "input"):
            return node
        code = _host(node)
        if code is not None and any(leaf.op == "scalar" for leaf in node.leaves()):
            if code not in self._names:
                self._names[code] = f"h{len(self._names)}"
                self.exprs[self._names[code]] = code
            return Node("scalar", name=self._names[code])
        return Node(node.op, tuple(self.fold(a) for a in node.args), tuple((k, self.fold(v)) for k, v in node.kw),
                    node.name, node.value)


@register_template("inplace_update")
class InplaceUpdateTemplate(Template):
    categories = frozenset({"optimizer"})
    budget = __doc__

    def matches(self, task: Task, reference_source: str | None = None) -> Match | None:
        # the forward returns nothing, so ``Template.matches`` (which wants outputs) would refuse it
        if not self.written_for(task):
            return None
        model = _read(reference_source if reference_source is not None else task.source)
        if model is None or not model.mutations or task.backward:
            return None
        return self.match(task, model)

    def match(self, task: Task, model: ReferenceModel) -> Match | None:
        numbers = _HostNumbers()
        updates = {name: numbers.fold(value) for name, value in model.mutations.items()}
        for value in updates.values():
            if not is_elementwise(value, lambda leaf: leaf.op in ("input", "scalar")):
                return None
        if any(set(leaves_of(v)[0]) - set(model.forward_args) for v in updates.values()):
            return None
        groups = _groups(updates, model.forward_args)
        flops = sum(flops_per_element(v) for v in updates.values())
        shape = "one pass" if len(groups) == 1 else f"one pass per group of same-shape arguments ({len(groups)})"
        return Match(self, task, model, {"groups": groups, "host": numbers.exprs, "flops": flops},
                     summary=f"in-place update of {', '.join(updates)} in {shape}")

    def knobs(self, match: Match) -> list[KnobSpec]:
        return KNOBS

    def presets(self, match: Match) -> list[dict[str, int]]:
        return [{"BLOCK": 2048, "NUM_WARPS": 8}, {"BLOCK": 4096, "NUM_WARPS": 8}]

    def render(self, match: Match, params: dict[str, int]) -> str:
        host = match.spec["host"]
        kernels, host_code, calls, helpers = [], [], [], set()
        for i, group in enumerate(match.spec["groups"]):
            kernel, function, call, used = _render_group(i, group, host)
            kernels.append(kernel)
            host_code.append(function)
            calls.append(call)
            helpers |= used
        body = "\n".join(calls) + "\nreturn None"
        doc = f"Template `inplace_update` for {match.task.id}: {match.summary}.\n\n" + \
            (__doc__ or "").split("\n\n", 1)[1]
        imports = "import math\n" if "math." in body else ""
        return assemble(doc, match, params, helper_source(helpers) + "\n\n".join(kernels), "\n\n".join(host_code),
                        body, imports=imports)


def _groups(updates: dict[str, Node], order: list[str]) -> list[dict]:
    """The updates split into groups that share no argument (each one launch over its own shape):
    an update joins its argument with every argument its value reads."""
    parent = {name: name for name in order}

    def find(name: str) -> str:
        while parent[name] != name:
            name = parent[name]
        return name

    for name, value in updates.items():
        for other in leaves_of(value)[0]:
            parent[find(other)] = find(name)
    groups: dict[str, dict] = {}
    for name in order:
        reads = any(name in leaves_of(v)[0] for v in updates.values())
        if name in updates or reads:
            group = groups.setdefault(find(name), {"updates": {}, "tensors": [], "scalars": []})
            group["tensors"].append(name)
    for name, value in updates.items():
        group = groups[find(name)]
        group["updates"][name] = value
        group["scalars"] += [s for s in leaves_of(value)[2] if s not in group["scalars"]]
    return list(groups.values())


def _render_group(i: int, group: dict, host: dict[str, str]) -> tuple[str, str, str, set[str]]:
    """One group's kernel, its host function, the forward's call of it, and the helpers it uses."""
    updates, tensors, scalars = group["updates"], group["tensors"], group["scalars"]
    expr = TritonExpr(kernel_leaf)
    results = {name: expr.value(value) for name, value in updates.items()}
    read = [t for t in tensors if any(t in leaves_of(v)[0] for v in updates.values())]
    ptrs = ", ".join(f"x_{t}_ptr" for t in tensors)
    sargs = "".join(f", s_{s}" for s in scalars)
    loads = "\n".join(f"    x_{t} = tl.load(x_{t}_ptr + offs, mask=mask, other=1.0).to(tl.float32)" for t in read)
    stores = "\n".join(f"    tl.store(x_{n}_ptr + offs, ({r}).to(x_{n}_ptr.dtype.element_ty), mask=mask)"
                       for n, r in results.items())
    kernel = f'''
@triton.jit
def _update_kernel_{i}({ptrs}, n_elements{sargs}, BLOCK: tl.constexpr):
    # reads each argument once, computes every update in fp32, stores each updated argument once
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
{loads}
{expr.code()}
{stores}
'''
    names = ", ".join(tensors)
    hargs = "".join(f", {s}" for s in scalars)
    function = f'''
def _update_{i}({names}{hargs}):
    first_ = {tensors[0]}  # names with _: arguments may be named first, t, n
    for t_ in ({names}{"," if len(tensors) == 1 else ""}):
        if t_.shape != first_.shape or not t_.is_contiguous():
            raise ValueError("inplace_update: arguments of one shape, contiguous, are updated in place")
    n_ = first_.numel()
    if n_:
        _update_kernel_{i}[(triton.cdiv(n_, BLOCK),)]({names}, n_{hargs}, BLOCK=BLOCK, num_warps=NUM_WARPS)
'''
    values = [host[s] if s in host else f"float(self.{s})" for s in scalars]
    return kernel, function, f"_update_{i}({', '.join([*tensors, *values])})", expr.helpers
