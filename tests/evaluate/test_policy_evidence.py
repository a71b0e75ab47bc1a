"""What of a traced call is charged to the candidate: the harness's own copies after the call are not."""

from __future__ import annotations

from kernellab.evaluate.own_identity import OwnIdentity
from kernellab.evaluate.policy import KernelRecord, judge_trace
from kernellab.evaluate.policy_evidence import candidate_records, span_records
from kernellab.sandbox.evidence import END_MARKER
from kernellab.sandbox.own_compiles import OWN_SUFFIX
from kernellab.tasks.model import Policy

OWN = "rmsnorm_kernel" + OWN_SUFFIX
IDENTITY = OwnIdentity(frozenset({OWN}))
END = f"void at::native::vectorized_elementwise_kernel<4, at::native::{END_MARKER}, std::array<char*, 1ul> >(int, ...)"
CLONE = "Memcpy DtoD (Device -> Device)"
CAST = "void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_cuda(...)>(...)"
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(...)"


def rec(name: str, us: float) -> KernelRecord:
    return KernelRecord(name=name, stream=7, duration_us=us)


def test_the_harness_copies_after_the_last_end_marker_are_not_the_candidates():
    records = [rec(CAST, 60.0), rec(OWN, 55.0), rec(END, 1.0), rec(CLONE, 80.0), rec(END, 1.0), rec(CLONE, 80.0)]
    kept = candidate_records(records, IDENTITY)
    assert [r.name for r in kept] == [CAST, OWN, CLONE]  # a copy between the forward and backward ends stays
    assert judge_trace(kept[:2], IDENTITY, Policy.STRICT, 7).violations == []
    # judged whole, the harness's copies would sink the candidate's share
    assert judge_trace([r for r in records if END_MARKER not in r.name], IDENTITY, Policy.STRICT, 7).violations


def test_compute_after_the_end_marker_is_still_charged():
    records = [rec(OWN, 55.0), rec(END, 1.0), rec(CLONE, 80.0), rec(ADD, 40.0)]
    kept = candidate_records(records, IDENTITY)
    assert [r.name for r in kept] == [OWN, ADD]
    assert "library kernels ran" in judge_trace(kept, IDENTITY, Policy.STRICT, 7).violations[0].detail


def test_without_an_end_marker_every_record_counts():
    records = [rec(OWN, 55.0), rec(CLONE, 80.0)]
    assert candidate_records(records, IDENTITY) == records


def test_a_traced_timing_round_charges_each_calls_span_and_compute_between_them():
    """A timing round's trace: the harness loads values, flushes and copies outputs between calls
    (data movement, not the candidate's), each call between two end markers. Inside a span every
    record counts; outside only compute does, so a library kernel a call slips between spans, or a
    library add on the timed calls, is still judged: strict fails on it."""
    def rec(name: str) -> KernelRecord:
        return KernelRecord(name=name, stream=7, duration_us=10.0)

    honest = [rec(CLONE), rec(END), rec(OWN), rec(END), rec(CAST), rec(CLONE), rec(END), rec(OWN), rec(END), rec(CLONE)]
    kept = span_records(honest, IDENTITY)
    assert [r.name for r in kept] == [OWN, OWN]
    assert judge_trace(kept, IDENTITY, Policy.STRICT, 7, calls=2).violations == []
    library = [rec(CLONE), rec(END), rec(ADD), rec(END), rec(CLONE), rec(END), rec(ADD), rec(END)]
    assert judge_trace(span_records(library, IDENTITY), IDENTITY, Policy.STRICT, 7, calls=2).violations
    between = [rec(END), rec(OWN), rec(END), rec(ADD), rec(END), rec(OWN), rec(END)]
    assert [r.name for r in span_records(between, IDENTITY)] == [OWN, ADD, OWN]
    assert [r.name for r in candidate_records(honest, IDENTITY)] != [OWN, OWN]  # a check's rule would charge the loads


def test_a_kernel_of_the_candidates_named_like_the_marker_is_its_work_not_a_marker():
    own_marker = f"void my_kernel{OWN_SUFFIX}<at::native::{END_MARKER} >(float*)"
    identity = OwnIdentity(frozenset({OWN, "my_kernel" + OWN_SUFFIX}))
    def rec(name: str) -> KernelRecord:
        return KernelRecord(name=name, stream=7, duration_us=10.0)

    records = [rec(END), rec(OWN), rec(own_marker), rec(CLONE), rec(END)]
    assert [r.name for r in span_records(records, identity)] == [OWN, own_marker, CLONE]
    assert own_marker in [r.name for r in candidate_records(records, identity)]


def test_a_traced_rounds_cost_is_its_kernels_device_time_not_the_profilers_delay():
    """Under the profiler every launch waits on the host for far longer than a short kernel runs, so
    the traced calls' event times read 10-20x the timed ones for honest kernels. What a traced call
    costs is its own kernels' durations as the device recorded them; the harness's loads and copies
    between calls are not the candidate's."""
    from kernellab.evaluate.policy_evidence import traced_device_us

    def raw(name: str, us: float) -> dict:
        return {"name": name, "stream": 7, "duration_us": us}

    trace = [raw(END, 1.0),  # the launch stream's marker, ahead of the round
             raw(CLONE, 80.0), raw(END, 1.0), raw(OWN, 10.0), raw(END, 1.0), raw(CLONE, 80.0),
             raw(END, 1.0), raw(OWN, 12.0), raw(END, 1.0), raw(CLONE, 80.0)]
    assert traced_device_us(trace, IDENTITY, calls=2) == 11.0
    slipped = trace[:-1] + [raw(ADD, 400.0)]  # a library kernel run between spans is still its cost
    assert traced_device_us(slipped, IDENTITY, calls=2) == 211.0
    assert traced_device_us(trace[:1], IDENTITY, calls=2) is None
