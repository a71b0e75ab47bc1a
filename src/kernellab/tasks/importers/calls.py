"""Recording a suite's calls of a reference function, and writing them back as drawable cases.

Suites such as KernelBench-X state their test inputs as code (a harness calling the reference a few
times). The importer runs that harness on the CPU with the function wrapped, and keeps, per call,
what kernellab needs to draw such inputs again under any seed: each tensor's shape, dtype and value
class (real, positive, unit interval, probability rows, symmetric positive-definite, integer range,
boolean, arange), the exact values of small tensors (the suite's hand-written corner cases), and
every other argument as a Python value (numbers, strings, dtypes, layouts, lists of numbers). Lists
of tensors become one forward argument per tensor.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

EXACT_MAX = 64  # tensors up to this many elements keep their exact values
SEEN_MIN = 1024  # a call with at least this many input elements is a seen config; smaller ones are edge


class Unsupported(Exception):
    """A call whose arguments or result kernellab cannot represent; the message is the reason."""


@dataclass
class Call:
    arguments: dict[str, Any]  # name -> value as passed (tensors cloned before the call)
    mutated: list[str]
    result: Any


@dataclass
class Recorder:
    fn: Callable
    calls: list[Call] = field(default_factory=list)

    def __call__(self, *args, **kwargs):
        try:
            bound = inspect.signature(self.fn).bind(*args, **kwargs)
            names = dict(bound.arguments)
        except (TypeError, ValueError):
            return self.fn(*args, **kwargs)
        before = {k: _clone(v) for k, v in names.items()}
        result = self.fn(*args, **kwargs)
        mutated = [k for k, v in names.items() if isinstance(v, torch.Tensor) and isinstance(before[k], torch.Tensor)
                   and not _same(v, before[k])]
        self.calls.append(Call(before, mutated, _clone(result)))
        return result


def _clone(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_clone(v) for v in value) if type(value) in (list, tuple) else value
    return value


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a, b) or
                                                              (a.is_floating_point() and torch.equal(a.isnan(), b.isnan())
                                                               and torch.equal(a.nan_to_num(), b.nan_to_num())))


def _sig3(x: float) -> float:
    if x == 0 or not math.isfinite(x):
        return 0.0 if not math.isfinite(x) else x
    return float(f"{x:.3g}")


def tensor_spec(t: torch.Tensor, exact: bool) -> dict[str, Any]:
    """How to draw a tensor like ``t`` again: its value class and range."""
    if t.is_complex() or t.is_quantized or t.layout != torch.strided:
        raise Unsupported(f"unsupported tensor argument: {t.dtype} / {t.layout}")
    spec: dict[str, Any] = {"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch.")}
    if t.numel() and (exact or t.numel() <= EXACT_MAX):
        spec.update(kind="exact", values=t.reshape(-1).tolist())
        return spec
    if t.numel() == 0:
        spec.update(kind="real", mean=0.0, std=1.0)
        return spec
    if t.dtype == torch.bool:
        spec.update(kind="bool", p=_sig3(float(t.float().mean())))
        return spec
    if not t.is_floating_point():
        flat = t.reshape(-1).to(torch.int64)
        if torch.equal(flat, torch.arange(flat.numel())):
            spec.update(kind="arange")
        else:
            spec.update(kind="int", lo=int(flat.min()), hi=int(flat.max()),
                        sorted=bool(flat.numel() > 1 and (flat[1:] >= flat[:-1]).all()))
        return spec
    x = t.detach().to(torch.float64)
    finite = x[torch.isfinite(x)]
    if finite.numel() == 0:
        raise Unsupported("a tensor argument with no finite value")
    lo, hi = float(finite.min()), float(finite.max())
    if x.dim() >= 2 and x.shape[-1] == x.shape[-2] and x.shape[-1] > 1 and _is_spd(x):
        spec.update(kind="spd")
    elif lo >= 0 and hi <= 1 and x.dim() >= 1 and x.shape[-1] > 1 and \
            bool(torch.allclose(x.sum(-1), torch.ones((), dtype=torch.float64), atol=1e-4)):
        spec.update(kind="probability")
    elif lo >= 0 and hi <= 1:
        spec.update(kind="unit", lo=_sig3(lo), hi=_sig3(hi))
    elif lo > 0:
        spec.update(kind="positive", lo=_sig3(lo), hi=_sig3(hi))
    else:
        spec.update(kind="real", mean=_sig3(float(finite.mean())), std=_sig3(float(finite.std()) if finite.numel() > 1 else 1.0))
    return spec


def _is_spd(x: torch.Tensor) -> bool:
    if not torch.allclose(x, x.transpose(-1, -2), rtol=1e-5, atol=1e-6):
        return False
    return bool((torch.linalg.cholesky_ex(x).info == 0).all())


DOMAIN_OF_KIND = {"positive": "positive", "unit": "unit", "probability": "probability", "spd": "positive_definite",
                  "int": "index", "arange": "index"}
_ORDER = ["probability", "unit", "positive", "real"]


def merged_domain(kinds: list[str]) -> str | None:
    """The input_domain over all calls: the narrowest class every call's values fall in."""
    domains = {DOMAIN_OF_KIND.get(k, "real") for k in kinds if k not in ("exact", "bool")}
    if not domains:
        return None
    if domains == {"positive_definite"} or domains == {"index"}:
        return domains.pop()
    if domains & {"positive_definite", "index"}:
        return None
    widest = max(_ORDER.index(d) for d in domains)
    return None if _ORDER[widest] == "real" else _ORDER[widest]


STATIC_TYPES = (type(None), bool, int, float, str, torch.dtype, torch.layout)


def static_value(value: Any) -> Any:
    if isinstance(value, STATIC_TYPES):
        return value
    if isinstance(value, torch.Size):
        return list(value)
    if isinstance(value, (list, tuple)) and all(isinstance(v, STATIC_TYPES) for v in value):
        return list(value) if isinstance(value, list) else tuple(value)
    raise Unsupported(f"unsupported argument type {type(value).__name__}")


def case_of(call: Call, params: dict[str, inspect.Parameter], exact: bool) -> dict[str, Any]:
    """One recorded call as {"tensors": {arg: spec}, "static": {name: value}}; a list of tensors
    ``xs`` becomes tensors ``xs_0``.. and a static marker ``{"__tensors__": n}``."""
    tensors: dict[str, Any] = {}
    static: dict[str, Any] = {}
    for name, value in call.arguments.items():
        if name == "out":
            continue  # results are compared as returned; an out= buffer is left to the function
        kind = params[name].kind
        if isinstance(value, torch.Tensor):
            tensors[name] = tensor_spec(value, exact)
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, torch.Tensor) for v in value):
            for i, v in enumerate(value):
                tensors[f"{name}_{i}"] = tensor_spec(v, exact)
            static[name] = {"__tensors__": len(value)}
        elif kind is inspect.Parameter.VAR_KEYWORD:
            if any(isinstance(v, torch.Tensor) for v in value.values()):
                raise Unsupported("tensors passed through **kwargs")
            static[name] = {k: static_value(v) for k, v in value.items()}
        else:
            if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
                raise Unsupported(f"argument {name!r} mixes tensors and other values")
            static[name] = static_value(value)
    return {"tensors": tensors, "static": static}


def case_numel(case: dict[str, Any]) -> int:
    return sum(math.prod(t["shape"]) for t in case["tensors"].values())


def result_supported(result: Any) -> str | None:
    """None if kernellab can compare this result, else why not."""
    if isinstance(result, (torch.Tensor, bool, int, float)) or result is None:
        return None if not isinstance(result, torch.Tensor) or not result.is_complex() else "a complex result"
    if isinstance(result, (list, tuple)):
        for r in result:
            why = result_supported(r)
            if why:
                return why
        return None
    return f"a {type(result).__name__} result"


def py_literal(value: Any) -> str:
    """Python source for a case value (torch dtypes and layouts by name, inf and nan as floats)."""
    if isinstance(value, torch.dtype):
        return f"torch.{str(value).removeprefix('torch.')}"
    if isinstance(value, torch.layout):
        return f"torch.{str(value).removeprefix('torch.')}"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"float({str(value)!r})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {py_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(py_literal(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + "".join(py_literal(v) + ", " for v in value) + ")"
    return repr(value)


def substitute(case: dict[str, Any], sizes: dict[int, int]) -> dict[str, Any] | None:
    """The case with sizes replaced (tensor dims, and integer arguments equal to a replaced size, in
    lists too); None when a tensor with exact values would change shape."""
    tensors = {}
    all_sizes = set(case_sizes(case))
    for name, t in case["tensors"].items():
        shape = [sizes.get(d, d) for d in t["shape"]]
        if shape != t["shape"] and t["kind"] == "exact":
            return None
        tensors[name] = {**t, "shape": shape}
        if t["kind"] == "int" and t["lo"] >= 0:
            # an index tensor: its range follows the tightest dimension it can index
            indexed = [d for d in all_sizes if d >= t["hi"] + 1]
            if indexed and min(indexed) in sizes:
                d0 = min(indexed)
                hi = sizes[d0] - 1 if t["hi"] + 1 == d0 else min(t["hi"], sizes[d0] - 1)
                tensors[name]["hi"] = max(hi, t["lo"])

    def sub(v: Any) -> Any:
        if isinstance(v, bool) or not isinstance(v, (int, list, tuple)):
            return v
        if isinstance(v, int):
            return sizes.get(v, v)
        return type(v)(sub(x) for x in v)

    static = {k: (v if isinstance(v, dict) else sub(v)) for k, v in case["static"].items()}
    return {"tensors": tensors, "static": static}


def case_sizes(case: dict[str, Any]) -> list[int]:
    return [d for t in case["tensors"].values() for d in t["shape"]]


# Source shared by generated references and baselines: drawing a case's tensors, calling the suite's
# function with them and the case's other arguments.
DRAW = '''
def _draw(t):
    """A tensor like the suite's: same shape and dtype, values of the same class, from the seeded generator."""
    dtype, shape, kind = getattr(torch, t["dtype"]), t["shape"], t["kind"]
    if kind == "exact":
        return torch.tensor(t["values"], dtype=dtype).reshape(shape)
    if kind == "bool":
        return torch.rand(shape) < t["p"]
    if kind == "arange":
        return torch.arange(math.prod(shape), dtype=dtype).reshape(shape)
    if kind == "int":
        x = torch.randint(t["lo"], t["hi"] + 1, shape, dtype=torch.int64)
        if t["sorted"]:
            x = x.reshape(-1).sort().values.reshape(shape)
        return x.to(dtype)
    if kind == "real":
        x = torch.randn(shape) * t["std"] + t["mean"]
    elif kind in ("positive", "unit"):
        x = torch.rand(shape) * (t["hi"] - t["lo"]) + t["lo"]
    elif kind == "probability":
        x = torch.softmax(torch.randn(shape), dim=-1)
    elif kind == "spd":
        n = shape[-1]
        a = torch.randn(shape, dtype=torch.float64)
        x = a @ a.transpose(-1, -2) / n + torch.eye(n, dtype=torch.float64)
    else:
        raise ValueError(kind)
    return x.to(dtype)
'''

CALL = '''
def _call(fn, params, static, tensors):
    """Call the suite's function with the case's tensors and other arguments, by name (positionally
    up to a *args parameter)."""
    positional, keywords, variadic = [], {}, None
    for name, kind in params:
        if name in static and isinstance(static[name], dict) and "__tensors__" in static[name]:
            value = [tensors[f"{name}_{i}"] for i in range(static[name]["__tensors__"])]
        elif name in static:
            value = static[name]
        elif tensors.get(name) is not None:
            value = tensors[name]
        else:
            continue
        if kind == "var_positional":
            variadic = list(value)
        elif kind == "var_keyword":
            keywords.update(value)
        elif kind == "positional_only":
            positional.append(value)
        else:
            keywords[name] = value
    if variadic is not None:
        # everything before *args goes by position
        before = [n for n, k in params[:[k for _, k in params].index("var_positional")]]
        positional = positional + [keywords.pop(n) for n in before if n in keywords]
        return _as_tensors(fn(*positional, *variadic, **keywords))
    return _as_tensors(fn(*positional, **keywords))


def _as_tensors(result):
    """A Python number the suite's function returns (``.item()``) as the 0-d tensor kernellab compares:
    float64 for a float, int64 for an int, bool for a bool; candidates return the same."""
    if isinstance(result, (tuple, list)):
        return type(result)(_as_tensors(r) for r in result)
    if isinstance(result, bool):
        return torch.tensor(result, dtype=torch.bool)
    if isinstance(result, int):
        return torch.tensor(result, dtype=torch.int64)
    if isinstance(result, float):
        return torch.tensor(result, dtype=torch.float64)
    return result
'''
