"""How each chain kind becomes a task, and how its kernel is called in the model again.

For every kind this module holds both directions, so they cannot drift apart:

* ``reference(shapes, spec)``: the task's ``reference.py`` in plain torch, written as a reader would
  (the search agent's templates match it), with the sizes as module-level constants: ``rows`` is the
  product of the leading (batch and sequence) dimensions, the other sizes are the model's own;
* ``call(module, inputs)``: the kernel's ``ModelNew`` applied to the chain's tensors in the model
  (leading dimensions flattened to rows, the model's weights passed as the module's parameters
  through ``torch.func.functional_call``, the outputs shaped back);
* ``fixed(shapes)``: the dimensions a kernel was verified on (all but batch and sequence), which
  decide at run time whether the kernel or the original computation runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch.func import functional_call

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


@dataclass(frozen=True)
class KindSpec:
    """One chain kind: its task text and its call in the model."""

    name: str
    description: str
    reference: Callable[[list[tuple[int, ...]], dict[str, Any]], tuple[str, dict[str, Any]]]
    call: Callable[[torch.nn.Module, list[torch.Tensor]], Any]
    fixed: Callable[[list[tuple[int, ...]]], list[dict[int, int]]]
    grad_inputs: tuple[str, ...] = ()
    backward_ok: bool = True  # the kind has a meaningful backward task
    index_inputs: tuple[str, ...] = ()


def _rows(shape: tuple[int, ...]) -> int:
    return int(math.prod(shape[:-1]))


def _last(shapes: list[tuple[int, ...]]) -> list[dict[int, int]]:
    return [{len(s) - 1: s[-1]} for s in shapes]


def _module(head: str, init: str, forward: str, inputs: str, init_inputs: str) -> str:
    return (f"{HEADER}\n{head}\n\nclass Model(nn.Module):\n{init}\n\n{forward}\n\n\n"
            f"def get_inputs():\n    return [{inputs}]\n\n\ndef get_init_inputs():\n    return [{init_inputs}]\n")


# ------------------------------------------------------------------------------------ norms

_RMS_INIT = '''    def __init__(self, hidden, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps'''


def _rmsnorm_ref(shapes, spec):
    head = f"rows = {_rows(shapes[0])}\nhidden = {shapes[0][-1]}\neps = {spec['eps']!r}"
    fwd = '''    def forward(self, x):
        xf = x.float()
        normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * normed.to(x.dtype)'''
    return _module(head, _RMS_INIT, fwd, "torch.randn(rows, hidden)", "hidden, eps"), {"rows": _rows(shapes[0])}


def _add_rmsnorm_ref(shapes, spec):
    head = f"rows = {_rows(shapes[0])}\nhidden = {shapes[0][-1]}\neps = {spec['eps']!r}"
    fwd = '''    def forward(self, x, residual):
        h = x + residual
        hf = h.float()
        normed = hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + self.eps)
        return h, self.weight * normed.to(h.dtype)'''
    return (_module(head, _RMS_INIT, fwd, "torch.randn(rows, hidden), torch.randn(rows, hidden)", "hidden, eps"),
            {"rows": _rows(shapes[0])})


_LN_INIT = '''    def __init__(self, hidden, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.bias = nn.Parameter(torch.zeros(hidden))
        self.eps = eps'''


def _layer_norm_ref(shapes, spec):
    head = f"rows = {_rows(shapes[0])}\nhidden = {shapes[0][-1]}\neps = {float(spec['eps'])!r}"
    fwd = '''    def forward(self, x):
        return F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, self.eps)'''
    return _module(head, _LN_INIT, fwd, "torch.randn(rows, hidden)", "hidden, eps"), {"rows": _rows(shapes[0])}


def _add_layer_norm_ref(shapes, spec):
    head = f"rows = {_rows(shapes[0])}\nhidden = {shapes[0][-1]}\neps = {float(spec['eps'])!r}"
    fwd = '''    def forward(self, x, residual):
        h = x + residual
        return h, F.layer_norm(h, (h.shape[-1],), self.weight, self.bias, self.eps)'''
    return (_module(head, _LN_INIT, fwd, "torch.randn(rows, hidden), torch.randn(rows, hidden)", "hidden, eps"),
            {"rows": _rows(shapes[0])})


def _flat_call(n_act: int, params: tuple[str, ...]):
    """Row kinds: the first ``n_act`` tensors flattened to [rows, last], the rest are parameters."""
    def call(module, inputs):
        acts = inputs[:n_act]
        lead = acts[0].shape[:-1]
        flat = [a.reshape(-1, a.shape[-1]) for a in acts]
        out = functional_call(module, dict(zip(params, inputs[n_act:])), tuple(flat))
        if isinstance(out, (tuple, list)):
            return tuple(o.reshape(*lead, o.shape[-1]) for o in out)
        return out.reshape(*lead, out.shape[-1])
    return call


# ------------------------------------------------------------------------------------ activations


def _act_expr(spec, x: str) -> str:
    act = spec["act"]
    if act == "gelu":
        approx = spec.get("approximate") or "none"
        return f"F.gelu({x}, approximate={approx!r})" if approx != "none" else f"F.gelu({x})"
    return {"silu": f"F.silu({x})", "relu": f"F.relu({x})", "tanh": f"torch.tanh({x})",
            "sigmoid": f"torch.sigmoid({x})"}[act]


def _act_mul_ref(shapes, spec):
    head = f"rows = {_rows(shapes[0])}\nintermediate = {shapes[0][-1]}"
    init = '''    def __init__(self):
        super().__init__()'''
    fwd = f'''    def forward(self, gate, up):
        return {_act_expr(spec, "gate")} * up'''
    return (_module(head, init, fwd, "torch.randn(rows, intermediate), torch.randn(rows, intermediate)", ""),
            {"rows": _rows(shapes[0])})


def _bias_act_ref(shapes, spec):
    x, w = shapes[0], shapes[1]
    head = f"rows = {_rows(x)}\nin_features = {w[1]}\nout_features = {w[0]}"
    init = '''    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)'''
    fwd = f'''    def forward(self, x):
        return {_act_expr(spec, "self.linear(x)")}'''
    return (_module(head, init, fwd, "torch.randn(rows, in_features)", "in_features, out_features"),
            {"rows": _rows(x)})


def _linear_ref(shapes, spec):
    x, w = shapes[0], shapes[1]
    bias = len(shapes) > 2
    head = f"rows = {_rows(x)}\nin_features = {w[1]}\nout_features = {w[0]}"
    init = f'''    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias={bias})'''
    fwd = '''    def forward(self, x):
        return self.linear(x)'''
    return (_module(head, init, fwd, "torch.randn(rows, in_features)", "in_features, out_features"),
            {"rows": _rows(x)})


def _linear_call(params):
    def call(module, inputs):
        x = inputs[0]
        out = functional_call(module, dict(zip(params, inputs[1:])), (x.reshape(-1, x.shape[-1]),))
        return out.reshape(*x.shape[:-1], out.shape[-1])
    return call


def _linear_fixed(shapes):
    return [{len(shapes[0]) - 1: shapes[0][-1]}] + [dict(enumerate(s)) for s in shapes[1:]]


# ------------------------------------------------------------------------------------ rope and loss


def _rope_ref(shapes, spec):
    q, k, cos = shapes[0], shapes[1], shapes[2]
    head = (f"batch_size = {q[0]}\nheads = {q[1]}\nkv_heads = {k[1]}\nseq_len = {q[2]}\nhead_dim = {q[3]}\n"
            f"table_batch = {cos[0]}")
    init = '''    def __init__(self):
        super().__init__()'''
    # the halves written inline (not through a local ``half``): the form the rope template reads
    fwd = '''    def forward(self, q, k, cos, sin):
        q_rot = torch.cat((-q[..., q.shape[-1] // 2:], q[..., :q.shape[-1] // 2]), dim=-1)
        k_rot = torch.cat((-k[..., k.shape[-1] // 2:], k[..., :k.shape[-1] // 2]), dim=-1)
        return q * cos + q_rot * sin, k * cos + k_rot * sin'''
    inputs = ("torch.randn(batch_size, heads, seq_len, head_dim), torch.randn(batch_size, kv_heads, seq_len, head_dim), "
              "torch.randn(table_batch, 1, seq_len, head_dim), torch.randn(table_batch, 1, seq_len, head_dim)")
    return _module(head, init, fwd, inputs, ""), {"batch_size": q[0], "seq_len": q[2], "table_batch": cos[0]}


def _rope_call(module, inputs):
    # q and k come out of a transpose in most models: a kernel gets them dense, as its task's inputs are
    return tuple(module(*(t.contiguous() for t in inputs)))


def _rope_fixed(shapes):
    return [{1: shapes[0][1], 3: shapes[0][3]}, {1: shapes[1][1], 3: shapes[1][3]}, {3: shapes[2][3]},
            {3: shapes[3][3]}]


def _linear_ce_ref(shapes, spec):
    h, w = shapes[0], shapes[1]
    head = f"num_tokens = {_rows(h)}\nhidden_size = {w[1]}\nvocab_size = {w[0]}"
    init = '''    def __init__(self, hidden_size, vocab_size):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(vocab_size, hidden_size) * hidden_size ** -0.5)'''
    red = spec.get("reduction", "mean")
    extra = "" if red == "mean" else f", reduction={red!r}"
    fwd = f'''    def forward(self, hidden, targets):
        return F.cross_entropy(F.linear(hidden, self.weight).float(), targets{extra})'''
    inputs = "torch.randn(num_tokens, hidden_size), torch.randint(0, vocab_size, (num_tokens,))"
    return _module(head, init, fwd, inputs, "hidden_size, vocab_size"), {"num_tokens": _rows(h)}


def _linear_ce_call(module, inputs):
    h, w, target = inputs
    return functional_call(module, {"weight": w}, (h.reshape(-1, h.shape[-1]), target.reshape(-1)))


KINDS: dict[str, KindSpec] = {k.name: k for k in (
    KindSpec("rmsnorm", "RMSNorm over the last dimension, as the model computes it (float32 statistics).",
             _rmsnorm_ref, _flat_call(1, ("weight",)), lambda s: _last(s), ("x",)),
    KindSpec("add_rmsnorm", "Residual add, then RMSNorm of the sum; returns the sum (the residual stream) and the "
             "normed sum.", _add_rmsnorm_ref, _flat_call(2, ("weight",)), lambda s: _last(s), ("x", "residual")),
    KindSpec("layer_norm", "LayerNorm over the last dimension with weight and bias.", _layer_norm_ref,
             _flat_call(1, ("weight", "bias")), lambda s: _last(s), ("x",)),
    KindSpec("add_layer_norm", "Residual add, then LayerNorm of the sum; returns the sum and the normed sum.",
             _add_layer_norm_ref, _flat_call(2, ("weight", "bias")), lambda s: _last(s), ("x", "residual")),
    KindSpec("act_mul", "Gated activation: act(gate) * up (SwiGLU / GeGLU).", _act_mul_ref, _flat_call(2, ()),
             lambda s: _last(s), ("gate", "up")),
    KindSpec("rope", "Rotary position embedding of q and k (rotate-half form).", _rope_ref, _rope_call, _rope_fixed,
             ("q", "k")),
    KindSpec("bias_act", "A linear layer with bias, then an activation.", _bias_act_ref,
             _linear_call(("linear.weight", "linear.bias")), _linear_fixed, ("x",)),
    KindSpec("linear_cross_entropy", "Language-model head then mean cross-entropy against the targets.",
             _linear_ce_ref, _linear_ce_call, lambda s: [{len(s[0]) - 1: s[0][-1]}, dict(enumerate(s[1])), {}],
             ("hidden",), index_inputs=("targets",)),
    KindSpec("op:linear", "A linear layer.", _linear_ref, None, _linear_fixed, ("x",)),  # call set below
)}


def kind_of(kind: str, spec: dict[str, Any], shapes: list) -> KindSpec | None:
    if kind == "op":
        if spec.get("op") == "linear" and len(shapes) in (2, 3) and all(s is not None for s in shapes):
            params = ("linear.weight", "linear.bias")[:len(shapes) - 1]
            base = KINDS["op:linear"]
            return KindSpec(base.name, base.description, base.reference, _linear_call(params), base.fixed,
                            base.grad_inputs)
        return None
    return KINDS.get(kind)
