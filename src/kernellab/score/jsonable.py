"""Strict JSON for what the score layer writes: NaN and ±inf become null (JSON has neither)."""

from __future__ import annotations

import enum
import json
import math
from typing import Any


def json_ready(value: Any) -> Any:
    """A copy of ``value`` that ``json.dumps(..., allow_nan=False)`` accepts: non-finite floats become
    None, tuples become lists, enums their values, mapping keys strings."""
    if isinstance(value, enum.Enum):
        return json_ready(value.value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    return value


def dumps(value: Any) -> str:
    return json.dumps(json_ready(value), allow_nan=False, separators=(",", ":"))
