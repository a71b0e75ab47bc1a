"""Judging the run-time evidence of the policy: which kernels ran, on which stream, and whose.

The static scan reads the source; this module judges what actually happened. On a GPU the evidence
is a CUPTI trace of traced calls (``judge_trace``): each kernel is the candidate's own only when its
function name is one the candidate's own compile produced (``own_identity.OwnIdentity``: the child
compiles them under a suffix no library kernel has, and the judge finds them in the child's compile
folders); every other kernel is torch data movement (allocate, copy, cast, fill), a memory copy,
Inductor's, or a library's. On the CPU the evidence is a dispatch-mode log of aten ops, the kernels
the interpreter launched in each call and the tensors handed to host code (``judge_cpu_call``).

The rules, per policy:

- ``strict``: no library compute kernel and no Inductor kernel; the candidate's own kernels carry at
  least ``MIN_STRICT_OWN_SHARE`` of the GPU time spent in its own kernels plus torch's data movement
  (so a task done by ``.contiguous()`` beside a token kernel fails, a cast before a kernel passes);
  no device-to-host copy (or, on the CPU, tensor handed to host code) of input-sized data.
- ``kernelbench``: an own kernel ran in every traced call and carries at least ``MIN_OWN_SHARE`` of
  the GPU time; no Inductor kernel and no Dynamo-compiled graph.
- every policy but ``off``: kernels on the launch stream only.
"""

from __future__ import annotations

import enum
import logging
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kernellab.evaluate.own_identity import OwnIdentity, mangled_identifiers
from kernellab.evaluate.verdict import Violation, ViolationKind
from kernellab.tasks.model import Policy

log = logging.getLogger(__name__)

# Under kernelbench, the candidate's own kernels must carry at least this share of GPU time: a floor
# against a token kernel beside library compute. On an H100 a ReLU epilogue after an IEEE-fp32 4096²
# cuBLAS GEMM is about 2% (43 µs of 2.3 ms); after a bf16 GEMM it nears 10%, so the floor stops token
# kernels, not every thin epilogue. A kernel that fuses or replaces the main work carries far more.
MIN_OWN_SHARE = 0.10
# Under strict, own kernels must carry at least this share of (own + data movement) GPU time. A cast
# or copy of an input before a bandwidth-bound kernel moves about as many bytes as the kernel itself
# (a bf16 -> fp32 cast reads 2 and writes 4 bytes per element, a kernel reading fp32 and writing bf16
# moves 6): about 50%, and two such casts beside one kernel stay above 25%. A token kernel beside a
# torch copy that does the task (a permutation by .contiguous()) is near 0%.
MIN_STRICT_OWN_SHARE = 0.25
# Every kernel takes a couple of µs however little it does (launch, ramp-up): that floor is taken off
# each record before shares are formed, so a token kernel counts for nothing and tiny configs, where
# every kernel is all floor, are not judged on shares at all (below SHARE_JUDGED_US per call).
LAUNCH_FLOOR_US = 2.0
SHARE_JUDGED_US = 20.0
# On the CPU the interpreter has no kernel times: the share is taken over bytes instead (what the
# candidate's kernels load and store against what torch's copies read and write), from a few KiB on.
SHARE_JUDGED_BYTES = 4096
# A device-to-host copy (or tensor handed to host code) of more than this fraction of the largest input
# is host compute's raw material, not launch planning (group sizes, offsets, a scalar): a violation in
# strict tasks. Small inputs get a floor, so reading one scalar of a one-element edge config passes.
HOST_READ_FRACTION = 0.25
HOST_READ_MIN_BYTES = 256
LISTED = 4  # names quoted in a violation; the rest are counted

# Inductor names its kernels triton_<first 3 letters of the kind>_...: pointwise, reduction,
# persistent reduction, template, foreach, split scan, cooperative reduction. Inductor picks these
# names itself; they are evidence of torch.compile under kernelbench, where library kernels pass.
_INDUCTOR = re.compile(r"^triton_(?:poi|red|per|tem|for|spl|coo)_")
# torch kernels that only allocate, view, copy or cast: copies and casts (direct_copy_kernel_cuda,
# float16_copy_kernel_cuda, bfloat16_..., float8_...), fills (zeros, pads), cat/stack and arange, as
# named in torch 2.11 CUPTI traces on an H100.
_DATA_MOVEMENT = ("copy_kernel_cuda", "direct_copy_kernel", "CatArrayBatchedCopy", "arange_cuda_out")
_TO_HOST = ("memcpy dtoh", "[cuda memcpy dtoh")
# Fills write one value: they cannot carry a task's work, so they weigh nothing in the share rules
# (they still name their stream, and a fill is still not an own kernel). Without this, Triton's own
# autotuner fails a legitimate candidate: each config it benchmarks is preceded by do_bench's 256 MiB
# L2-flush fill, ~100x the time of a small config's kernel.
# A fill is a kernel named by fill's own functor or function, as a whole identifier: torch's
# ``masked_fill_kernel`` and ``index_fill_kernel_impl`` compute (a mask, an index) and contain the
# letters "fill_kernel" inside a longer name, which a substring test took for a fill.
_FILL = re.compile(r"\b(?:FillFunctor|fill_kernel)\b")


def _is_fill(name: str) -> bool:
    return _FILL.search(name) is not None


def _weighs(record: KernelRecord) -> bool:
    """Whether a record counts in the share rules: every kernel but a fill."""
    return not _is_fill(record.name)


class Origin(str, enum.Enum):
    OWN = "own"
    INDUCTOR = "inductor"
    MEMCPY = "memcpy"  # memcpy/memset activity on the device or from the host
    TO_HOST = "to_host"  # device-to-host copies: reading sizes to plan launches, or host compute
    DATA_MOVEMENT = "data_movement"
    LIBRARY = "library"


@dataclass(frozen=True)
class KernelRecord:
    name: str
    stream: int
    duration_us: float
    correlation: int | None = None  # CUPTI correlation id, when the caller has one
    bytes: int | None = None  # memory copies: bytes moved, when the trace says


@dataclass
class TraceJudgement:
    violations: list[Violation] = field(default_factory=list)
    own_share: float = 0.0  # fraction of the records' GPU time spent in the candidate's kernels
    library_kernels: dict[str, float] = field(default_factory=dict)  # every other name -> share
    own_kernels: dict[str, float] = field(default_factory=dict)  # own kernel name -> share
    to_host_bytes: int = 0
    # own / (own + torch data movement) GPU time, launch floors taken off; None when too short to judge
    strict_share: float | None = None


def kernel_function_name(name: str) -> str:
    """The function name in a demangled kernel name: ``void ns::k<float>(float*, int)`` -> ``k``."""
    text = name.replace("(anonymous namespace)", "anon")
    depth, end = 0, len(text)
    for i, ch in enumerate(text):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(depth - 1, 0)
        elif ch == "(" and depth == 0:
            end = i
            break
    head = re.sub(r"<.*>", "", text[:end])
    idents = re.findall(r"[A-Za-z_]\w*", head)
    return idents[-1] if idents else name


def _is_own(name: str, own: OwnIdentity) -> bool:
    if name.startswith("_Z"):  # a mangled name the profiler did not demangle
        return any(own.owns(ident) for ident in mangled_identifiers(name))
    return own.owns(kernel_function_name(name))


def kernel_origin(name: str, own: OwnIdentity) -> Origin:
    """Who a kernel in the trace belongs to. Inductor's kernels are never own: the child renames only
    kernels whose code is in the candidate's file, and Inductor writes its own files."""
    lowered = name.lower()
    if _is_own(name, own):
        return Origin.OWN
    if _INDUCTOR.match(name) or _INDUCTOR.match(kernel_function_name(name)):
        return Origin.INDUCTOR
    if lowered.startswith(_TO_HOST):
        return Origin.TO_HOST
    if lowered.startswith(("memcpy", "memset", "[cuda memcpy", "[cuda memset")):
        return Origin.MEMCPY
    if _is_fill(name) or any(marker in name for marker in _DATA_MOVEMENT):
        return Origin.DATA_MOVEMENT
    return Origin.LIBRARY


def host_read_limit(largest_input_bytes: int, calls: int = 1) -> int:
    """Bytes of device-to-host copies per traced span above which a strict task's candidate is
    computing on the host (see ``HOST_READ_FRACTION``)."""
    return max(HOST_READ_MIN_BYTES, int(largest_input_bytes * HOST_READ_FRACTION)) * max(calls, 1)


def _listing(shares: dict[str, float]) -> str:
    top = sorted(shares.items(), key=lambda kv: -kv[1])
    text = ", ".join(f"{_short(n)} ({s:.0%})" for n, s in top[:LISTED])
    return text + (f" and {len(top) - LISTED} more" if len(top) > LISTED else "")


def _short(name: str, width: int = 70) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def judge_trace(kernels: list[KernelRecord], own: OwnIdentity, policy: Policy, launch_stream: int, *,
                host_limit: int | None = None, calls: int = 1) -> TraceJudgement:
    """Judge the GPU records of ``calls`` traced calls (the harness's marker left out) under ``policy``.

    ``host_limit``: bytes of device-to-host copies beyond which a strict task is computing on the
    host (``host_read_limit``); None leaves transfers unjudged."""
    total = sum(max(k.duration_us, 0.0) for k in kernels if _weighs(k))
    origins = [kernel_origin(k.name, own) for k in kernels]
    by_origin: dict[Origin, Counter[str]] = {o: Counter() for o in Origin}
    for record, origin in zip(kernels, origins):
        by_origin[origin][record.name] += max(record.duration_us, 0.0) if _weighs(record) else 0.0
    share = (lambda us: us / total) if total > 0 else (lambda us: 0.0)
    own_kernels = {n: share(us) for n, us in by_origin[Origin.OWN].items()}
    others = {n: share(us) for o in Origin if o is not Origin.OWN for n, us in by_origin[o].items()}
    to_host = sum(_copy_bytes(r) for r, o in zip(kernels, origins) if o is Origin.TO_HOST)
    judgement = TraceJudgement(own_share=share(sum(by_origin[Origin.OWN].values())),
                               library_kernels=dict(sorted(others.items(), key=lambda kv: -kv[1])),
                               own_kernels=own_kernels, to_host_bytes=to_host)
    if policy is Policy.OFF:
        return judgement
    found = judgement.violations

    def flag(kind: ViolationKind, detail: str) -> None:
        found.append(Violation(kind, detail))

    inductor = {n: share(us) for n, us in by_origin[Origin.INDUCTOR].items()}
    if inductor:
        flag(ViolationKind.POLICY, f"torch.compile/Inductor kernels ran: {_listing(inductor)}")
    if not own_kernels:
        seen = f" (ran: {_listing(others)})" if others else ""
        flag(ViolationKind.POLICY, f"no kernel of the candidate ran{seen}")
    if policy is Policy.STRICT:
        library = {n: share(us) for n, us in by_origin[Origin.LIBRARY].items()}
        if library:
            flag(ViolationKind.POLICY, f"library kernels ran in a strict task: {_listing(library)}")
        if own_kernels:
            judgement.strict_share = _strict_share(kernels, origins, calls, flag)
        if host_limit is not None and to_host > host_limit:
            flag(ViolationKind.POLICY, f"{_bytes(to_host)} copied from the device to the host in a strict task "
                                       f"(input-sized: over {_bytes(host_limit)}): host compute")
    elif policy is Policy.KERNELBENCH and own_kernels:
        if total <= 0:
            log.warning("trace records carry no durations; the own-kernel share cannot be judged")
        elif judgement.own_share < MIN_OWN_SHARE:
            flag(ViolationKind.POLICY, f"the candidate's kernels carry {judgement.own_share:.1%} of GPU time, "
                                       f"under the {MIN_OWN_SHARE:.0%} minimum; the rest: {_listing(others)}")
    off_stream = [(r.name, r.stream) for r, o in zip(kernels, origins)
                  if r.stream != launch_stream and o not in (Origin.MEMCPY, Origin.TO_HOST)]
    if off_stream:
        names = sorted({n for n, _ in off_stream})
        streams = sorted({s for _, s in off_stream})
        listed = ", ".join(_short(n) for n in names[:LISTED]) + (f" and {len(names) - LISTED} more"
                                                                 if len(names) > LISTED else "")
        flag(ViolationKind.SIDE_STREAM, f"kernels ran on stream(s) {streams}, not the launch stream "
                                        f"{launch_stream}: {listed}")
    return judgement


def _effective_us(record: KernelRecord) -> float:
    return max(record.duration_us - LAUNCH_FLOOR_US, 0.0)


def _strict_share(kernels: list[KernelRecord], origins: list[Origin], calls: int, flag) -> float | None:
    """Own kernels must carry the work: at least ``MIN_STRICT_OWN_SHARE`` of own + data movement.
    Returns the share, or None where the call is too short to judge."""
    moving = (Origin.DATA_MOVEMENT, Origin.MEMCPY, Origin.TO_HOST)
    own_us = sum(_effective_us(r) for r, o in zip(kernels, origins) if o is Origin.OWN)
    moved = Counter()
    for r, o in zip(kernels, origins):
        if o in moving and _weighs(r):
            moved[r.name] += _effective_us(r)
    moved_us = sum(moved.values())
    judged = own_us + moved_us
    if judged < SHARE_JUDGED_US * max(calls, 1):
        return None
    if own_us < MIN_STRICT_OWN_SHARE * judged:
        shares = {n: us / judged for n, us in moved.items() if us > 0}
        flag(ViolationKind.POLICY, f"torch data movement carries {moved_us / judged:.0%} of the candidate's GPU "
                                   f"time and its own kernels {own_us / judged:.0%} (at least "
                                   f"{MIN_STRICT_OWN_SHARE:.0%} in a strict task): {_listing(shares)}")
    return own_us / judged


def _copy_bytes(record: KernelRecord) -> int:
    """Bytes of a copy; where the trace gave none, a lower bound from its duration at 1 GB/s (no
    device-to-host path is slower), so an unknown size is never overstated."""
    if record.bytes is not None:
        return int(record.bytes)
    return int(max(record.duration_us - LAUNCH_FLOOR_US, 0.0) * 1e3)


# --- CPU evidence: a dispatch-mode log of aten ops, launches, hand-outs --------------------------
_ALLOWED_OPS = frozenset("""
    lift_fresh lift_fresh_copy lift arange view _unsafe_view view_as reshape reshape_as _reshape_alias
    as_strided as_strided_ t transpose permute expand expand_as unsqueeze squeeze slice select alias detach
    detach_ contiguous clone copy_ _to_copy to _copy_from _copy_from_and_resize fill_ zero_ split
    split_with_sizes unbind chunk narrow flatten unflatten movedim resize_ set_ size stride numel dim
    is_contiguous is_same_size storage_offset cat stack constant_pad_nd pad repeat view_as_real
    view_as_complex resolve_conj resolve_neg diagonal unfold record_stream is_pinned
    _has_compatible_shallow_copy_type promote_types result_type can_cast _local_scalar_dense item is_nonzero
""".split())  # promote_types, result_type, can_cast: dtype queries, no data touched  # the last three read a value to the host (sizes, offsets), as .item() and .tolist() do
_ALLOWED_OP_PREFIXES = ("empty", "new_", "zeros", "ones", "full", "sym_")


def _op_name(op: str) -> tuple[str, str]:
    """("aten", "mm") for "aten.mm.default" or "aten::mm"."""
    parts = op.replace("::", ".").split(".")
    return parts[0], parts[1] if len(parts) > 1 else ""


def op_is_data_movement(op: str) -> bool:
    namespace, name = _op_name(op)
    return namespace == "aten" and (name in _ALLOWED_OPS or name.startswith(_ALLOWED_OP_PREFIXES))


def judge_op_log(ops: list[str], policy: Policy) -> list[Violation]:
    """Strict only: any aten op beyond allocate/view/copy/cast (and any non-aten op) is library compute."""
    if policy is not Policy.STRICT:
        return []
    library = Counter(op for op in ops if not op_is_data_movement(op))
    if not library:
        return []
    return [Violation(ViolationKind.POLICY, f"library ops ran in a strict task: {_op_listing(library)}")]


def _op_listing(ops: Counter[str]) -> str:
    top = ops.most_common()
    more = f" and {len(top) - LISTED} more" if len(top) > LISTED else ""
    return ", ".join(f"{op} ×{n}" for op, n in top[:LISTED]) + more


@dataclass
class CpuCallEvidence:
    """What the child saw of one traced request on the CPU (its ``run`` reply, judged)."""

    ops: list[str] | None = None  # aten ops issued outside interpreted launches
    ops_in_kernels: list[str] | None = None  # aten ops issued inside launches by non-Triton code
    launches: list[list[Sequence[Any]]] | None = None  # per call: (kernel name, file of its code, bytes moved)
    hand_outs: list[tuple[str, int]] | None = None  # (method, bytes) of tensors handed to host code
    moved_bytes: int | None = None  # bytes torch's copies and fills read and wrote outside launches
    compiled_graphs: int = 0  # Dynamo graphs compiled in the candidate's process so far
    hidden_ops: list[str] | None = None  # aten ops the profiler saw run and the op log never did


def judge_cpu_call(evidence: CpuCallEvidence, policy: Policy, candidate_file: str, *,
                   host_limit: int | None = None) -> list[Violation]:
    """Judge one request's CPU evidence under ``policy``; ``host_limit``: bytes handed to host code
    beyond which a strict task is computing on the host (``host_read_limit`` of its calls)."""
    if policy is Policy.OFF:
        return []
    found = list(judge_op_log(evidence.ops or [], policy))
    hidden = Counter(op for op in evidence.hidden_ops or [] if not op_is_data_movement(op))
    if hidden and policy is Policy.STRICT:
        # torch itself builds tensors below the Python key (``torch.tensor``'s ``detach_``): only
        # compute counts, as in the op log
        found.append(Violation(ViolationKind.POLICY, "library ops ran hidden from the op log (the Python dispatch "
                                                     "key excluded, or dispatch modes disabled): " + _op_listing(hidden)))
    if evidence.ops_in_kernels:
        found.append(Violation(ViolationKind.POLICY, "torch ops ran inside a Triton kernel launch (host code in a "
                                                     "jit body or hook, which no GPU kernel runs): "
                               + _op_listing(Counter(evidence.ops_in_kernels))))
    if evidence.launches is not None:
        for i, launched in enumerate(evidence.launches):
            if not any(launch[1] == candidate_file for launch in launched):
                others = sorted({launch[0] for launch in launched})
                ran = f" (launched: {', '.join(others[:LISTED])})" if others else ""
                where = f" in call {i + 1} of {len(evidence.launches)}" if len(evidence.launches) > 1 else ""
                found.append(Violation(ViolationKind.POLICY, f"no kernel of the candidate ran{where}{ran}"))
                break
    if policy is Policy.STRICT and evidence.launches is not None and evidence.moved_bytes is not None:
        # Bytes moved inside launches by code of other files (a library's Triton kernel, or its
        # ``@triton.jit`` function called from one of the candidate's) are not the candidate's work.
        own_bytes = other_bytes = 0
        for launched in evidence.launches:
            for launch in launched:
                if len(launch) > 2:
                    if launch[1] == candidate_file:
                        own_bytes += int(launch[2])
                    else:
                        other_bytes += int(launch[2])
        judged = own_bytes + other_bytes + evidence.moved_bytes
        if judged >= SHARE_JUDGED_BYTES and own_bytes < MIN_STRICT_OWN_SHARE * judged:
            moved = evidence.moved_bytes / judged
            others = f", code of other files in launches {other_bytes / judged:.0%}," if other_bytes else ""
            found.append(Violation(ViolationKind.POLICY,
                                   f"torch's copies and fills move {moved:.0%} of the bytes{others} and the "
                                   f"candidate's kernels {own_bytes / judged:.0%} (at least "
                                   f"{MIN_STRICT_OWN_SHARE:.0%} in a strict task)"))
    if evidence.compiled_graphs:
        found.append(Violation(ViolationKind.POLICY, f"torch.compile compiled {evidence.compiled_graphs} graph(s) "
                                                     f"in the candidate's process"))
    if policy is Policy.STRICT and host_limit is not None and evidence.hand_outs:
        handed = sum(size for _, size in evidence.hand_outs)
        if handed > host_limit:
            what = Counter(name for name, _ in evidence.hand_outs)
            found.append(Violation(ViolationKind.POLICY,
                                   f"{_bytes(handed)} of tensor data handed to host code in a strict task "
                                   f"(input-sized: over {_bytes(host_limit)}; "
                                   f"{', '.join(f'.{n}() ×{c}' for n, c in what.most_common(LISTED))}): "
                                   f"host compute"))
    return found
