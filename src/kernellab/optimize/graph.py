"""The model's captured graph: Dynamo's FX graphs of one call, and a canonical reading of their nodes.

Dynamo (``torch.compile`` with a backend of ours) captures the model as it runs, so any Python model
works, graph breaks included (each piece is one ``GraphModule``). Nodes are read at the level a user
wrote them (``F.silu``, ``x.pow(2)``, ``+``), which is also the level chains are rewritten at when
kernels are installed, so the same matcher finds a chain when profiling and when installing.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import fx

# call_function targets -> canonical names
_FUNCTIONS: dict[Any, str] = {
    operator.add: "add", torch.add: "add", operator.iadd: "add",
    operator.mul: "mul", torch.mul: "mul", operator.imul: "mul",
    operator.sub: "sub", torch.sub: "sub", operator.truediv: "div", torch.div: "div",
    operator.neg: "neg", torch.neg: "neg", operator.pow: "pow", torch.pow: "pow",
    operator.getitem: "getitem", torch.rsqrt: "rsqrt", torch.sqrt: "sqrt", torch.mean: "mean",
    torch.cat: "cat", torch.tanh: "tanh", torch.sigmoid: "sigmoid", torch.exp: "exp",
    F.silu: "silu", F.gelu: "gelu", F.relu: "relu", F.linear: "linear", F.layer_norm: "layer_norm",
    F.softmax: "softmax", torch.softmax: "softmax", F.cross_entropy: "cross_entropy",
    F.scaled_dot_product_attention: "sdpa", torch.matmul: "matmul", operator.matmul: "matmul",
    F.embedding: "embedding", F.dropout: "dropout", F.conv2d: "conv2d",
}
_CASTS = {"to", "float", "type_as", "contiguous", "half", "bfloat16", "type"}
_METHODS = {"pow": "pow", "mean": "mean", "rsqrt": "rsqrt", "add": "add", "mul": "mul", "neg": "neg",
            "view": "view", "reshape": "reshape", "transpose": "transpose", "sigmoid": "sigmoid",
            "softmax": "softmax", "exp": "exp", "tanh": "tanh", "sub": "sub", "div": "div"}


def canonical(node: fx.Node) -> str:
    """What a node computes, as one name (``cast`` for dtype/layout conversions, ``?`` unknown)."""
    if node.op == "call_function":
        name = _FUNCTIONS.get(node.target)
        if name is None:
            name = getattr(node.target, "__name__", "?")
        return name
    if node.op == "call_method":
        if node.target in _CASTS:
            return "cast"
        return _METHODS.get(node.target, str(node.target))
    return node.op  # placeholder, get_attr, output, call_module


def through_casts(node: Any) -> Any:
    """The value under any chain of casts (``x.to(float32)`` reads as ``x``)."""
    while isinstance(node, fx.Node) and canonical(node) == "cast":
        node = node.args[0]
    return node


def example(node: Any) -> Any:
    """The example value Dynamo recorded for a node (a FakeTensor), or the constant itself."""
    if isinstance(node, fx.Node):
        return node.meta.get("example_value")
    return node


def shape_of(node: Any) -> tuple[int, ...] | None:
    value = example(node)
    if isinstance(value, torch.Tensor):
        return tuple(int(s) if not isinstance(s, torch.SymInt) else int(s.node.hint or 0) for s in value.shape)
    return None


def dtype_of(node: Any) -> torch.dtype | None:
    value = example(node)
    return value.dtype if isinstance(value, torch.Tensor) else None


@dataclass
class CapturedGraph:
    """One piece of the model's call as Dynamo saw it."""

    index: int
    module: fx.GraphModule
    example_inputs: list[Any] = field(default_factory=list)

    def label(self, node: fx.Node) -> str:
        return f"g{self.index}.{node.name}"




class Capture:
    """A Dynamo backend that records each graph and runs it through ``wrap`` (the graph runs as is
    when ``wrap`` is None). Use: ``cap = Capture(); compiled = torch.compile(model, backend=cap)``."""

    def __init__(self, wrap: Callable[[CapturedGraph], Callable[..., Any]] | None = None):
        self.graphs: list[CapturedGraph] = []
        self.wrap = wrap

    def __call__(self, gm: fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        graph = CapturedGraph(len(self.graphs), gm, list(example_inputs))
        self.graphs.append(graph)
        return self.wrap(graph) if self.wrap is not None else gm.forward


def labelled_runner(graph: CapturedGraph) -> Callable[..., Any]:
    """Runs a graph node by node, each inside a profiler range named after it (``evaluate.profiling.label``)."""
    from kernellab.evaluate.profiling import label

    class _Labelled(fx.Interpreter):
        def run_node(self, n: fx.Node) -> Any:
            if n.op in ("placeholder", "output", "get_attr"):
                return super().run_node(n)
            with label(graph.label(n)):
                return super().run_node(n)

    def run(*args: Any) -> Any:
        return _Labelled(graph.module).run(*args)

    return run
