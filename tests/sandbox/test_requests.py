"""The judge's requests to a candidate child as typed records: each names a harness method that
exists with exactly its fields as arguments, round-trips through its channel message, and refuses
what the harness could only fail on."""

from __future__ import annotations

import dataclasses
import inspect
import json

import pytest

from kernellab.sandbox.child import Harness
from kernellab.sandbox.requests import (
    REQUESTS,
    ChildRequest,
    ImportRequest,
    RunRequest,
    TimeRoundRequest,
    WarmRequest,
)


@pytest.mark.parametrize("op", sorted(set(REQUESTS) - {"exit"}))
def test_each_request_matches_its_harness_method(op):
    method = getattr(Harness, f"op_{op}")
    harness_args = [p for p in inspect.signature(method).parameters if p != "self"]
    assert [f.name for f in dataclasses.fields(REQUESTS[op])] == harness_args


def test_requests_round_trip_through_their_messages_and_json():
    for request in (ImportRequest("/tmp/k.py"), RunRequest("c|float32", [{"inputs": [1, 2]}], [(64, "float32")], True),
                    TimeRoundRequest("c|float32", "c float32", [{"inputs": [1]}], "graph", None, [0], 1.5, True),
                    WarmRequest("src", "ref.py", 7, [{"values": {"N": 8}}])):
        message = json.loads(json.dumps({**request.to_message(), "token": "t"}))
        assert ChildRequest.from_message(message) == request


@pytest.mark.parametrize("make, message", [
    (lambda: RunRequest("k", []), "at least one call"),
    (lambda: RunRequest("k", [{}], [(-1, "float32")]), "poison_bytes"),
    (lambda: RunRequest("k", [{}], [64]), "poison_bytes"),
    (lambda: TimeRoundRequest("k", "r", [{}], "wallclock"), "not one of events, graph"),
    (lambda: ChildRequest.from_message({"op": "format_disk"}), "unknown child request"),
])
def test_bad_requests_are_refused_by_the_judge(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_the_judge_sends_only_typed_requests():
    """Every request kernellab's own code sends a candidate child is a record (``ask`` / ``send``):
    a raw ``child.request("op", ...)`` skips the validators and drifts from the harness's arguments.
    (``CandidateProcess.request`` stays for the protocol tests, which speak the wire format.)"""
    import ast
    from pathlib import Path

    import kernellab

    raw = []
    for path in Path(kernellab.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("request", "submit") and node.args
                    and isinstance(node.args[0], ast.Constant) and node.args[0].value in REQUESTS):
                raw.append(f"{path.name}:{node.lineno}: {ast.unparse(node)[:80]}")
    assert raw == []
