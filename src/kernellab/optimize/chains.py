"""Fusable chains in a captured FX graph, found by their dataflow (never by module type or name).

Each matcher reads nodes through ``graph.canonical`` and returns ``Chain`` records: the nodes, the
tensors that go in, the values that come out (those used outside the chain), and the constants
(eps, the activation). A chain is only reported when nothing outside it reads its inner values, so
the same record can later be replaced by one fused op. The same matchers run when kernels are
installed (``install.py``), which is how an installed kernel finds its chain again in any model.

| kind | what | inputs -> outputs |
|---|---|---|
| ``add_rmsnorm`` | residual add, then RMSNorm of the sum (Llama, Mistral, Qwen) | x, residual, weight -> sum, normed |
| ``rmsnorm`` | ``x * rsqrt(mean(x^2) + eps) * w`` (casts anywhere) | x, weight -> normed |
| ``add_layer_norm`` / ``layer_norm`` | residual add then LayerNorm / LayerNorm (ViT, GPT-2) | (x, residual,) weight, bias -> ... |
| ``act_mul`` | ``act(gate) * up`` (SwiGLU, GeGLU) | gate, up -> out |
| ``rope`` | rotary embedding of q and k: ``x * cos + rotate_half(x) * sin`` | q, k, cos, sin -> q', k' |
| ``bias_act`` | a linear layer with bias, then an activation | x, weight, bias -> out |
| ``linear_cross_entropy`` | LM head then cross-entropy | h, weight, target -> loss |
| ``op`` | any other node with time of its own (a matmul, attention, softmax...) | its tensors -> its value |
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torch import fx

from kernellab.optimize.graph import canonical, dtype_of, shape_of, through_casts

ACTIVATIONS = ("silu", "gelu", "relu", "tanh", "sigmoid")


@dataclass
class Chain:
    kind: str
    nodes: list[fx.Node]
    inputs: list[Any]  # fx.Nodes (tensors)
    outputs: list[fx.Node]
    spec: dict[str, Any] = field(default_factory=dict)

    @property
    def anchor(self) -> fx.Node:
        return self.outputs[-1]

    def signature(self) -> tuple:
        """Chains with equal signatures are one task (the same op in every layer)."""
        shapes = tuple(shape_of(i) for i in self.inputs)
        dtypes = tuple(str(dtype_of(i)).replace("torch.", "") for i in self.inputs)
        return (self.kind, tuple(sorted((k, str(v)) for k, v in self.spec.items())), shapes, dtypes)


def _is(node: Any, *names: str) -> bool:
    return isinstance(node, fx.Node) and canonical(node) in names


def _const(node: Any) -> Any:
    return None if isinstance(node, fx.Node) else node


def _casts_between(top: fx.Node, bottom: Any) -> list[fx.Node]:
    """The cast nodes from ``top`` down to ``bottom`` (exclusive)."""
    out = []
    node = top
    while isinstance(node, fx.Node) and node is not bottom and canonical(node) == "cast":
        out.append(node)
        node = node.args[0]
    return out


def _rms_core(out: fx.Node) -> dict[str, Any] | None:
    """``out = w * cast(xc * rsqrt(mean(xc^2, -1) + eps))`` in any operand order; xc = cast(x)."""
    if not _is(out, "mul") or len(out.args) != 2:
        return None
    for w, other in ((out.args[0], out.args[1]), (out.args[1], out.args[0])):
        w0 = through_casts(w)
        m = through_casts(other)
        if not isinstance(w0, fx.Node) or (shape_of(w0) is None or len(shape_of(w0)) != 1) or not _is(m, "mul"):
            continue
        for xc, r in ((m.args[0], m.args[1]), (m.args[1], m.args[0])):
            if not _is(r, "rsqrt") or not _is(r.args[0], "add"):
                continue
            add = r.args[0]
            var, eps = add.args if not isinstance(add.args[0], (int, float)) else add.args[::-1]
            if not _is(var, "mean") or not isinstance(eps, float):
                continue
            dim = var.args[1] if len(var.args) > 1 else var.kwargs.get("dim")
            if dim not in (-1, [-1], (-1,)) or not var.kwargs.get("keepdim", len(var.args) > 2 and var.args[2]):
                continue
            pw = var.args[0]
            if not _is(pw, "pow") or pw.args[1] != 2 or through_casts(pw.args[0]) is not through_casts(xc):
                continue
            x = through_casts(xc)
            nodes = [out, *_casts_between(other, m), m, r, add, var, pw,
                     *_casts_between(xc, x), *_casts_between(pw.args[0], x), *_casts_between(w, w0)]
            return {"x": x, "w": w0, "eps": eps, "nodes": list(dict.fromkeys(nodes))}
    return None


def _users_inside(chain_nodes: set[fx.Node], outputs: list[fx.Node]) -> bool:
    """True when no node of the chain but its outputs is read from outside it."""
    for n in chain_nodes:
        if n in outputs:
            continue
        if any(u not in chain_nodes for u in n.users):
            return False
    return True


def _residual_add(x: fx.Node) -> tuple[Any, Any] | None:
    if _is(x, "add") and len(x.args) == 2 and all(isinstance(a, fx.Node) for a in x.args) \
            and shape_of(x.args[0]) == shape_of(x.args[1]) == shape_of(x):
        return x.args[0], x.args[1]
    return None


def match_norms(gm: fx.GraphModule) -> list[Chain]:
    found = []
    for out in gm.graph.nodes:
        core = _rms_core(out)
        if core is not None:
            nodes, x = core["nodes"], core["x"]
            pair = _residual_add(x)
            if pair is not None:
                chain = Chain("add_rmsnorm", [x, *nodes], [pair[0], pair[1], core["w"]], [x, out], {"eps": core["eps"]})
                if _users_inside(set(chain.nodes), chain.outputs):
                    found.append(chain)  # the plain RMSNorm below is the fallback where the add is taken
            chain = Chain("rmsnorm", nodes, [x, core["w"]], [out], {"eps": core["eps"]})
            if _users_inside(set(chain.nodes), chain.outputs):
                found.append(chain)
        elif _is(out, "layer_norm"):
            args = list(out.args) + [None] * 5
            x, shape, w, b = args[0], args[1], out.kwargs.get("weight", args[2]), out.kwargs.get("bias", args[3])
            eps = out.kwargs.get("eps", args[4] if args[4] is not None else 1e-5)
            xs = shape_of(x)
            if not isinstance(w, fx.Node) or not isinstance(b, fx.Node) or xs is None \
                    or list(shape) != [xs[-1]]:
                continue
            pair = _residual_add(x)
            if pair is not None:
                found.append(Chain("add_layer_norm", [x, out], [pair[0], pair[1], w, b], [x, out], {"eps": eps}))
            found.append(Chain("layer_norm", [out], [x, w, b], [out], {"eps": eps}))
    return found


def _act(node: Any) -> tuple[str, str] | None:
    if not _is(node, *ACTIVATIONS):
        return None
    approximate = node.kwargs.get("approximate", "none") if canonical(node) == "gelu" else ""
    return canonical(node), approximate


def match_act_mul(gm: fx.GraphModule) -> list[Chain]:
    found = []
    for out in gm.graph.nodes:
        if not _is(out, "mul") or len(out.args) != 2:
            continue
        for gate, up in ((out.args[0], out.args[1]), (out.args[1], out.args[0])):
            act = _act(gate)
            if act is None or not isinstance(up, fx.Node) or len(gate.users) != 1:
                continue
            if shape_of(gate) != shape_of(up) or shape_of(gate) is None:
                continue
            found.append(Chain("act_mul", [out, gate], [gate.args[0], up], [out],
                               {"act": act[0], "approximate": act[1]}))
            break
    return found


def _rope_one(out: fx.Node) -> dict[str, Any] | None:
    """``x * cos + cat(-x[..., h:], x[..., :h]) * sin``."""
    if not _is(out, "add") or len(out.args) != 2:
        return None
    for a, b in ((out.args[0], out.args[1]), (out.args[1], out.args[0])):
        if not (_is(a, "mul") and _is(b, "mul")):
            continue
        for x, cos in ((a.args[0], a.args[1]), (a.args[1], a.args[0])):
            for rot, sin in ((b.args[0], b.args[1]), (b.args[1], b.args[0])):
                if not _is(rot, "cat"):
                    continue
                parts = rot.args[0]
                if not isinstance(parts, (list, tuple)) or len(parts) != 2 or not _is(parts[0], "neg"):
                    continue
                hi, lo = parts[0].args[0], parts[1]
                if not (_is(hi, "getitem") and _is(lo, "getitem")) or hi.args[0] is not x or lo.args[0] is not x:
                    continue
                return {"x": x, "cos": cos, "sin": sin, "nodes": [out, a, b, rot, parts[0], hi, lo]}
    return None


def match_rope(gm: fx.GraphModule) -> list[Chain]:
    singles = [r for r in (_rope_one(n) | {"out": n} if _rope_one(n) else None for n in gm.graph.nodes) if r]
    by_table: dict[tuple, list[dict]] = {}
    for r in singles:
        by_table.setdefault((r["cos"], r["sin"]), []).append(r)
    found = []
    for (cos, sin), group in by_table.items():
        while len(group) >= 2:
            q, k = group.pop(0), group.pop(0)
            found.append(Chain("rope", q["nodes"] + k["nodes"], [q["x"], k["x"], cos, sin], [q["out"], k["out"]]))
    return [c for c in found if _users_inside(set(c.nodes), c.outputs)]


def match_bias_act(gm: fx.GraphModule) -> list[Chain]:
    found = []
    for out in gm.graph.nodes:
        act = _act(out)
        if act is None:
            continue
        lin = out.args[0]
        if not _is(lin, "linear") or len(lin.users) != 1:
            continue
        args = list(lin.args) + [None]
        bias = lin.kwargs.get("bias", args[2])
        if not isinstance(bias, fx.Node):
            continue
        found.append(Chain("bias_act", [out, lin], [args[0], args[1], bias], [out],
                           {"act": act[0], "approximate": act[1]}))
    return found


def match_linear_ce(gm: fx.GraphModule) -> list[Chain]:
    found = []
    for out in gm.graph.nodes:
        if not _is(out, "cross_entropy"):
            continue
        logits, target = out.args[0], out.args[1] if len(out.args) > 1 else out.kwargs.get("target")
        nodes = [out]
        node = logits
        while _is(node, "cast", "view", "reshape") and len(node.users) == 1:
            nodes.append(node)
            node = node.args[0]
        if not _is(node, "linear") or len(node.users) != 1 or (len(node.args) > 2 and node.args[2] is not None):
            continue
        nodes.append(node)
        spec = {"ignore_index": out.kwargs.get("ignore_index", -100), "reduction": out.kwargs.get("reduction", "mean")}
        if spec["reduction"] not in ("mean", "sum"):
            continue
        found.append(Chain("linear_cross_entropy", nodes, [node.args[0], node.args[1], target], [out], spec))
    return found


SINGLE_OPS = ("linear", "sdpa", "softmax", "matmul", "embedding", "conv2d", "layer_norm", "cross_entropy", "gelu",
              "silu", "add", "mul")


def find_chains(gm: fx.GraphModule, skip: frozenset[str] = frozenset()) -> list[Chain]:
    """Non-overlapping chains, wider fusions first, then every remaining node as its own ``op``.
    ``skip``: chain kinds not to form (their nodes fall to narrower chains or single ops)."""
    taken: set[fx.Node] = set()
    chains: list[Chain] = []
    for matcher in (match_linear_ce, match_norms, match_rope, match_act_mul, match_bias_act):
        for chain in matcher(gm):
            if chain.kind not in skip and taken.isdisjoint(chain.nodes):
                chains.append(chain)
                taken.update(chain.nodes)
    for node in gm.graph.nodes:
        if node in taken or node.op not in ("call_function", "call_method", "call_module"):
            continue
        tensors = [a for a in node.args if isinstance(a, fx.Node) and shape_of(a) is not None]
        tensors += [v for v in node.kwargs.values() if isinstance(v, fx.Node) and shape_of(v) is not None]
        chains.append(Chain("op", [node], tensors, [node], {"op": canonical(node)}))
    return chains


FUSED_KINDS = frozenset({"add_rmsnorm", "rmsnorm", "add_layer_norm", "layer_norm", "act_mul", "rope", "bias_act",
                         "linear_cross_entropy"})
