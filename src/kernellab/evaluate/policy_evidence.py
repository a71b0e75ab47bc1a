"""The policy evidence of one child request, judged with what the judge knows of the candidate.

``checking`` hands every ``run`` reply here; the timing stage hands the trace of its profiled batch
to ``judge_traced_calls``. Both judge with the candidate's compiled identity, read from the child's
own compile folders (``own_identity``), and with limits taken from the judge's own inputs, never
from anything the child reports about itself.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

import torch

from kernellab.evaluate.own_identity import OwnIdentity, OwnKernelReader
from kernellab.evaluate.policy import (CpuCallEvidence, KernelRecord, Origin, host_read_limit, judge_cpu_call,
                                       judge_trace, kernel_origin)
from kernellab.evaluate.verdict import Violation, ViolationKind
from kernellab.sandbox.evidence import END_MARKER

log = logging.getLogger(__name__)

# One reader per candidate child: it remembers the compile entries it has read.
_READERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def own_identity(ctx) -> OwnIdentity:
    """The kernels the candidate's compiles have produced so far (read again after each trace)."""
    child = ctx.child
    reader = _READERS.get(child)
    if reader is None:
        env = child.spec.env
        cuda = ctx.scan.own_kernels.cuda if ctx.scan is not None else ()
        reader = OwnKernelReader(str(ctx.path), env.get("TRITON_CACHE_DIR"), env.get("TORCH_EXTENSIONS_DIR"), cuda,
                                 candidate_source=ctx.source, compile_env=env)
        _READERS[child] = reader
    identity = reader.identity()
    for note in identity.notes:
        if note not in ctx.verdict.notes:
            ctx.verdict.notes.append(note)
    return identity


def largest_input_bytes(inputs: list[Any]) -> int:
    """Bytes of the largest tensor among a call's inputs: what "input-sized" is measured against."""
    sizes = [t.numel() * t.element_size() for t in inputs if isinstance(t, torch.Tensor)]
    return max(sizes, default=0)


def judge_traced_calls(ctx, trace: list[dict[str, Any]], *, where: str, calls: int = 1,
                       input_bytes: int = 0, spans: bool = False) -> list[Violation]:
    """Policy violations in the GPU trace of ``calls`` calls, as the child returns it (``op_run``'s
    ``trace``: the harness's launch-stream marker first, then every GPU record of the calls).

    ``input_bytes``: the largest input of one call (``largest_input_bytes``), for the limit on
    device-to-host copies; 0 leaves them unjudged. Usable from any stage that profiled a request.
    ``spans``: a timing round's trace, each call between a pair of end-of-call markers
    (``round_clock._spanned``): ``span_records`` picks the candidate's part."""
    if not trace:
        return [Violation(ViolationKind.POLICY, f"{where}: the traced call left no GPU records")]
    records = [KernelRecord(name=r["name"], stream=r["stream"], duration_us=r["duration_us"], bytes=r.get("bytes"))
               for r in trace]
    identity = own_identity(ctx)
    marker = records[0]
    rest = span_records(records[1:], identity) if spans else candidate_records(records[1:], identity)
    limit = host_read_limit(input_bytes, calls) if input_bytes else None
    judgement = judge_trace(rest, identity, ctx.policy, marker.stream, host_limit=limit, calls=calls)
    log.debug("%s: %d records, own kernels known %s, judged own %s", where, len(rest), sorted(identity.kernels),
              sorted(judgement.own_kernels))
    if judgement.strict_share is not None:  # benchmarks/strict_share.py collects these
        log.debug("strict share %.4f at %s", judgement.strict_share, where)
    return [Violation(v.kind, f"{where}: {v.detail}") for v in judgement.violations]


def traced_device_us(trace: list[dict[str, Any]], identity: OwnIdentity, calls: int) -> float | None:
    """Device µs per call of the candidate's records in a traced timing round's trace (the part
    ``span_records`` charges to it). The profiler delays every launch on the host by far more than a
    short kernel lasts, so the traced calls' own event times say little; the kernels' durations,
    recorded by the device, are what the calls cost. None without records."""
    if len(trace) < 2 or calls < 1:
        return None
    records = [KernelRecord(name=r["name"], stream=r["stream"], duration_us=r["duration_us"], bytes=r.get("bytes"))
               for r in trace[1:]]
    return sum(r.duration_us for r in span_records(records, identity)) / calls


def candidate_records(records: list[KernelRecord], identity: OwnIdentity) -> list[KernelRecord]:
    """The records charged to the candidate: all up to the last end-of-call marker (``CallSpan``),
    and after it only compute (kernels that are not data movement), since what follows is the
    harness copying outputs and gradients to send them; a candidate's work deferred past the marker
    is still judged. Without a marker (an older child), every record."""
    ends = [i for i, r in enumerate(records) if _is_marker(r, identity)]
    if not ends:
        return records
    last = ends[-1]
    kept = [r for i, r in enumerate(records[:last]) if i not in ends]
    moving = (Origin.DATA_MOVEMENT, Origin.MEMCPY, Origin.TO_HOST)
    return kept + [r for r in records[last + 1:] if kernel_origin(r.name, identity) not in moving]


def _is_marker(record: KernelRecord, identity: OwnIdentity) -> bool:
    """An end-of-call marker: torch's own fill of 16-bit integers. A kernel of the candidate's whose
    name holds the marker's (a template argument ``FillFunctor<short>``) is its work, never a marker."""
    return END_MARKER in record.name and kernel_origin(record.name, identity) is Origin.DATA_MOVEMENT


def span_records(records: list[KernelRecord], identity: OwnIdentity) -> list[KernelRecord]:
    """The records of a traced timing round charged to the candidate: everything between the two
    markers of each call, and outside them only compute (the harness loads, flushes and copies
    there, all data movement; a candidate's work slipped in between calls is still judged). A
    marker of the candidate's own making only shifts which of its own records count as inside."""
    moving = (Origin.DATA_MOVEMENT, Origin.MEMCPY, Origin.TO_HOST)
    kept, inside = [], False
    for r in records:
        if _is_marker(r, identity):
            inside = not inside
        elif inside or kernel_origin(r.name, identity) not in moving:
            kept.append(r)
    return kept


def request_violations(ctx, value: dict[str, Any], where: str, inputs: list[Any] | None = None) -> list[Violation]:
    """Policy evidence of a ``run`` reply: its GPU trace, or on the CPU its op log, the interpreter's
    launches of each call, ops inside launches and tensors handed to host code."""
    calls = len(value.get("results") or []) or 1
    input_bytes = largest_input_bytes(inputs or [])
    found: list[Violation] = []
    if value.get("trace"):
        found += judge_traced_calls(ctx, value["trace"], where=where, calls=calls, input_bytes=input_bytes)
    if value.get("ops") is not None:
        evidence = CpuCallEvidence(ops=value["ops"], ops_in_kernels=value.get("ops_in_kernels"),
                                   launches=value.get("launches"), hand_outs=value.get("hand_outs"),
                                   moved_bytes=value.get("moved_bytes"), hidden_ops=value.get("hidden_ops"),
                                   compiled_graphs=int(value.get("compiled_graphs") or 0))
        limit = host_read_limit(input_bytes, calls) if input_bytes else None
        found += [Violation(v.kind, f"{where}: {v.detail}")
                  for v in judge_cpu_call(evidence, ctx.policy, str(ctx.path), host_limit=limit)]
        if evidence.launches is None and value.get("interpreted_kernels") is not None and ctx.requires_own_kernel \
                and not set(value["interpreted_kernels"]) & set(ctx.scan.own_kernels.triton):
            found.append(Violation(ViolationKind.POLICY, f"{where}: no Triton kernel of the candidate ran"))
    elif value.get("compiled_graphs") and ctx.requires_own_kernel:
        found.append(Violation(ViolationKind.POLICY, f"{where}: torch.compile compiled {value['compiled_graphs']} "
                                                     f"graph(s) in the candidate's process"))
    return found
