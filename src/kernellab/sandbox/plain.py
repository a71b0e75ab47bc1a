"""A call ends when its outputs are plain tensors: the output contract, applied inside the call.

A forward may return a tensor, or exact ``tuple``/``list`` containers of tensors (``None`` entries
are dropped, as the reference's own outputs are flattened). Anything else - a tensor subclass, a
``Parameter``, a ``list`` subclass, a ``namedtuple``, a mapping, an object whose Python behaviour
could launch the real work when the harness walks it - breaks the contract.

The walk uses only exact ``type(...) is ...`` tests and the built-in containers' own iteration, so
no method the candidate defined runs while the outputs are taken apart. The harness applies it to
what a call returned *before* the call's end event is recorded (``round_clock``) and before a
checked call's outputs are copied (``child``): deferred work then either runs inside the call or is
a contract violation, never something that happens after the clock stopped.
"""

from __future__ import annotations

from typing import Any

import torch

_TENSOR = torch.Tensor
_CONTAINERS = (tuple, list)
_MAX_DEPTH = 8  # nested containers deeper than this are not an output structure any task has


class OutputContractError(Exception):
    """The candidate's call returned something other than plain tensors in plain containers."""


def plain_outputs(out: Any) -> list[torch.Tensor]:
    """The call's tensors in order, or ``OutputContractError`` naming what broke the contract."""
    flat: list[torch.Tensor] = []
    _walk(out, flat, 0)
    return flat


def plain_gradients(grads: Any) -> list[torch.Tensor | None]:
    """``torch.autograd.grad``'s result, entry for entry (``None`` for an unused input kept in place)."""
    if type(grads) not in _CONTAINERS:
        raise OutputContractError(f"gradients came back as a {_qualname(type(grads))}")
    out: list[torch.Tensor | None] = []
    for g in grads:
        if g is not None and type(g) is not _TENSOR:
            raise OutputContractError(f"a gradient is a {_qualname(type(g))}, not a plain torch.Tensor")
        out.append(g)
    return out


def _walk(value: Any, flat: list[torch.Tensor], depth: int) -> None:
    kind = type(value)
    if kind is _TENSOR:
        flat.append(value)
    elif value is None:
        return
    elif kind in _CONTAINERS:
        if depth >= _MAX_DEPTH:
            raise OutputContractError(f"outputs nested more than {_MAX_DEPTH} containers deep")
        for item in value:  # the built-in iterator of an exact tuple or list: no candidate code runs
            _walk(item, flat, depth + 1)
    else:
        raise OutputContractError(f"the call returned a {_qualname(kind)}, not a plain torch.Tensor "
                                  f"(or an exact tuple/list of them)")


def _qualname(kind: type) -> str:
    module = type.__dict__["__module__"].__get__(kind) if isinstance(kind, type) else "?"
    return f"{module}.{type.__dict__['__qualname__'].__get__(kind)}"


_NO_TORCH_FUNCTION = torch._C.DisableTorchFunction


def harness_method(method):
    """``method`` (a ``TensorBase`` method, taken from the class) called with ``__torch_function__``
    off. Taking it from the class skips an instance attribute, but the C method still hands the call
    to ``type(t).__torch_function__``, and a candidate can give a tensor the harness reuses (a timing
    slot's live input) a class of its own (``x.__class__ = Sub``): the harness's copies and loads
    would then run its code outside the timed events."""
    def call(*args):
        with _NO_TORCH_FUNCTION():
            return method(*args)

    call.__name__ = getattr(method, "__name__", "call")
    return call

