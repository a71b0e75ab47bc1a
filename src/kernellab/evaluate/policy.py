"""Judging the run-time evidence of the policy: which kernels ran, on which stream, and whose.

The static scan reads the source; this module judges what actually happened. On a GPU the evidence
is a CUPTI trace of the candidate's calls (``judge_trace``): each kernel is attributed to the
candidate's own Triton functions or ``__global__`` functions, to torch's allocate/view/copy/cast
kernels, to Inductor, or to a library. On the CPU it is a dispatch-mode log of aten ops
(``judge_op_log``), which adds evidence but cannot be the judge: a candidate can detect the mode.

The caller passes only the records of the candidate's calls (the harness's own marker and copies
left out) and the stream the calls were launched on.
"""

from __future__ import annotations

import enum
import logging
import re
from collections import Counter
from dataclasses import dataclass, field

from kernellab.evaluate.static_scan import OwnKernels
from kernellab.evaluate.verdict import Violation, ViolationKind
from kernellab.tasks.model import Policy

log = logging.getLogger(__name__)

# Under kernelbench, the candidate's own kernels must carry at least this share of GPU time: a floor
# against a token kernel beside library compute. On an H100 a ReLU epilogue after an IEEE-fp32 4096²
# cuBLAS GEMM is about 2% (43 µs of 2.3 ms); after a bf16 GEMM it nears 10%, so the floor stops token
# kernels, not every thin epilogue. A kernel that fuses or replaces the main work carries far more.
MIN_OWN_SHARE = 0.10
LISTED = 4  # names quoted in a violation; the rest are counted

# Inductor names its kernels triton_<first 3 letters of the kind>_...: pointwise, reduction,
# persistent reduction, template, foreach, split scan, cooperative reduction.
_INDUCTOR = re.compile(r"^triton_(?:poi|red|per|tem|for|spl|coo)_")
# torch kernels that only allocate, view, copy or cast: copies and casts (direct_copy_kernel_cuda,
# float16_copy_kernel_cuda, bfloat16_..., float8_...), fills (zeros, pads), cat/stack and arange, as
# named in torch 2.11 CUPTI traces on an H100.
_DATA_MOVEMENT = ("copy_kernel_cuda", "direct_copy_kernel", "CatArrayBatchedCopy", "FillFunctor", "fill_kernel",
                  "arange_cuda_out")
_OLD_TRITON_SUFFIX = re.compile(r"_\d[0-9a-z]*$")  # Triton 2.x appended a signature like _0d1d2de
# Vendor library kernel families. An own kernel named like one would let a library kernel of that name
# pass as the candidate's, so such names are never attributed to the candidate.
_VENDOR_NAMES = re.compile(r"^(?:void\s+)?(?:ampere|sm\d+|volta|turing|hopper|maxwell|cutlass|cudnn|cublas|"
                           r"nvjet|xmma)", re.IGNORECASE)


class Origin(str, enum.Enum):
    OWN = "own"
    INDUCTOR = "inductor"
    MEMCPY = "memcpy"  # memcpy/memset activity (device-to-host included: reading sizes to plan launches)
    DATA_MOVEMENT = "data_movement"
    LIBRARY = "library"


@dataclass(frozen=True)
class KernelRecord:
    name: str
    stream: int
    duration_us: float
    correlation: int | None = None  # CUPTI correlation id, when the caller has one


@dataclass
class TraceJudgement:
    violations: list[Violation] = field(default_factory=list)
    own_share: float = 0.0  # fraction of the records' GPU time spent in the candidate's kernels
    library_kernels: dict[str, float] = field(default_factory=dict)  # every other name -> share
    own_kernels: dict[str, float] = field(default_factory=dict)  # own kernel name -> share


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


def _is_own(name: str, own: OwnKernels) -> bool:
    if _VENDOR_NAMES.match(name):
        return False
    if name.startswith("_Z"):  # mangled: a length-prefixed identifier
        return any(re.search(rf"(?<!\d){len(n)}{re.escape(n)}", name) for n in own.triton | own.cuda)
    function = kernel_function_name(name)
    if function in own.cuda or function in own.triton:
        return True
    stem = _OLD_TRITON_SUFFIX.sub("", name)
    return stem != name and stem in own.triton


def kernel_origin(name: str, own: OwnKernels) -> Origin:
    """Who a kernel in the trace belongs to. Inductor wins over own: a copied Inductor kernel is not."""
    lowered = name.lower()
    if _INDUCTOR.match(name) or _INDUCTOR.match(kernel_function_name(name)):
        return Origin.INDUCTOR
    if _is_own(name, own):
        return Origin.OWN
    if lowered.startswith(("memcpy", "memset", "[cuda memcpy", "[cuda memset")):
        return Origin.MEMCPY
    if any(marker in name for marker in _DATA_MOVEMENT):
        return Origin.DATA_MOVEMENT
    return Origin.LIBRARY


def _listing(shares: dict[str, float]) -> str:
    top = sorted(shares.items(), key=lambda kv: -kv[1])
    text = ", ".join(f"{_short(n)} ({s:.0%})" for n, s in top[:LISTED])
    return text + (f" and {len(top) - LISTED} more" if len(top) > LISTED else "")


def _short(name: str, width: int = 70) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def judge_trace(kernels: list[KernelRecord], own: OwnKernels, policy: Policy, launch_stream: int) -> TraceJudgement:
    """Judge the GPU records of the candidate's calls under ``policy``."""
    total = sum(max(k.duration_us, 0.0) for k in kernels)
    origins = [kernel_origin(k.name, own) for k in kernels]
    by_origin: dict[Origin, Counter[str]] = {o: Counter() for o in Origin}
    for record, origin in zip(kernels, origins):
        by_origin[origin][record.name] += max(record.duration_us, 0.0)
    share = (lambda us: us / total) if total > 0 else (lambda us: 0.0)
    own_kernels = {n: share(us) for n, us in by_origin[Origin.OWN].items()}
    others = {n: share(us) for o in Origin if o is not Origin.OWN for n, us in by_origin[o].items()}
    judgement = TraceJudgement(own_share=share(sum(by_origin[Origin.OWN].values())),
                               library_kernels=dict(sorted(others.items(), key=lambda kv: -kv[1])),
                               own_kernels=own_kernels)
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
    elif policy is Policy.KERNELBENCH and own_kernels:
        if total <= 0:
            log.warning("trace records carry no durations; the own-kernel share cannot be judged")
        elif judgement.own_share < MIN_OWN_SHARE:
            flag(ViolationKind.POLICY, f"the candidate's kernels carry {judgement.own_share:.1%} of GPU time, "
                                       f"under the {MIN_OWN_SHARE:.0%} minimum; the rest: {_listing(others)}")
    off_stream = [(r.name, r.stream) for r, o in zip(kernels, origins)
                  if r.stream != launch_stream and o is not Origin.MEMCPY]
    if off_stream:
        names = sorted({n for n, _ in off_stream})
        streams = sorted({s for _, s in off_stream})
        listed = ", ".join(_short(n) for n in names[:LISTED]) + (f" and {len(names) - LISTED} more"
                                                                 if len(names) > LISTED else "")
        flag(ViolationKind.SIDE_STREAM, f"kernels ran on stream(s) {streams}, not the launch stream "
                                        f"{launch_stream}: {listed}")
    return judgement


# --- CPU evidence: a dispatch-mode log of aten ops ----------------------------------------------
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
    top = library.most_common()
    listed = ", ".join(f"{op} ×{n}" for op, n in top[:LISTED])
    more = f" and {len(top) - LISTED} more" if len(top) > LISTED else ""
    return [Violation(ViolationKind.POLICY, f"library ops ran in a strict task: {listed}{more}")]
