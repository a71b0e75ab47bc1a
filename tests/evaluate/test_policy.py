"""Judging GPU traces and CPU evidence, with kernel names as CUPTI reports them.

Own kernels are recognised by compiled identity: the child compiles them under ``OWN_SUFFIX`` and the
judge finds the suffixed names in the child's compile folders (``OwnIdentity``). Here the identity
is given; ``test_own_identity.py`` reads it from real compiles.
"""

from __future__ import annotations

import pytest

from kernellab.evaluate.own_identity import OwnIdentity
from kernellab.evaluate.policy import (
    LAUNCH_FLOOR_US, MIN_OWN_SHARE, MIN_STRICT_OWN_SHARE, CpuCallEvidence, KernelRecord, Origin, host_read_limit,
    judge_cpu_call, judge_op_log, judge_trace, kernel_function_name, kernel_origin,
)
from kernellab.evaluate.verdict import ViolationKind as K
from kernellab.sandbox.own_compiles import OWN_SUFFIX
from kernellab.tasks.model import Policy

STRICT, KB, OFF = Policy.STRICT, Policy.KERNELBENCH, Policy.OFF
LAUNCH = 7
OWN_RMS = "rmsnorm_kernel" + OWN_SUFFIX
OWN_SUMSQ = "_sum_of_squares" + OWN_SUFFIX

TRITON_OWN = OwnIdentity(frozenset({OWN_RMS, OWN_SUMSQ}))
CUDA_OWN = OwnIdentity(frozenset({"add_kernel" + OWN_SUFFIX, "scale_kernel" + OWN_SUFFIX}))
# A candidate's Triton function named like ATen's elementwise kernel, as its compile names it.
ATEN_NAMED = OwnIdentity(frozenset({"vectorized_elementwise_kernel" + OWN_SUFFIX}))
CUBLAS_NAMED = OwnIdentity(frozenset({"ampere_sgemm_128x64_nn" + OWN_SUFFIX, "Kernel2" + OWN_SUFFIX}))

COPY = ("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::direct_copy_kernel_cuda"
        "(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::"
        "{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::(anonymous namespace)::direct_copy_kernel_cuda"
        "(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::"
        "{lambda(float)#1}, std::array<char*, 2ul>)")
FILL = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >"
        "(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)")
CAT = ("void at::native::(anonymous namespace)::CatArrayBatchedCopy_contig<at::native::(anonymous namespace)::"
       "OpaqueType<4u>, unsigned int, 2, 128, 1>(...)")
ADD = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >"
       "(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)")
# Names as a torch 2.11 / Triton 3.6 CUPTI trace on an H100 reports them.
CAST = ("void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_cuda("
        "at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::"
        "bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul>)")
ARANGE = ("void (anonymous namespace)::elementwise_kernel_with_index<int, at::native::arange_cuda_out("
          "c10::Scalar const&, c10::Scalar const&, c10::Scalar const&, at::Tensor&)::{lambda()#1}::operator()() "
          "const::{lambda()#4}::operator()() const::{lambda(long)#1}>(int, ...)")
REDUCE = ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
          "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::"
          "{lambda(float, float)#1}>, unsigned int, float, 4, 4> >(...)")
NVJET = "nvjet_sm90_tst_64x8_64x16_1x4_h_bz_NNT"
SM80 = ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_"
        "execute_kernel__5x_cublas")
SGEMM = "ampere_sgemm_128x64_nn"
HGEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel"
INDUCTOR = "triton_poi_fused_add_0"


def rec(name: str, us: float = 10.0, stream: int = LAUNCH) -> KernelRecord:
    return KernelRecord(name=name, stream=stream, duration_us=us)


def kinds(judgement) -> list[K]:
    return [v.kind for v in judgement.violations]


# --- attribution ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name, own, origin", [
    (OWN_RMS, TRITON_OWN, Origin.OWN),
    ("rmsnorm_kernel", TRITON_OWN, Origin.LIBRARY),  # the source name alone is what any library could run
    ("rmsnorm_kernel_backward" + OWN_SUFFIX, TRITON_OWN, Origin.LIBRARY),  # suffixed, but not compiled by it
    (f"void add_kernel{OWN_SUFFIX}<float>(float const*, float const*, float*, int)", CUDA_OWN, Origin.OWN),
    (f"add_kernel{OWN_SUFFIX}(float const*, float const*, float*, int)", CUDA_OWN, Origin.OWN),
    ("scale_kernel" + OWN_SUFFIX, CUDA_OWN, Origin.OWN),  # extern "C": unmangled
    (f"void my_ns::(anonymous namespace)::add_kernel{OWN_SUFFIX}<__half, 4>(__half*, int)", CUDA_OWN, Origin.OWN),
    (f"_ZN2ns{len('add_kernel' + OWN_SUFFIX)}add_kernel{OWN_SUFFIX}IfEEvPKT_PS1_i", CUDA_OWN, Origin.OWN),  # mangled
    (f"void other_kernel<add_kernel{OWN_SUFFIX}>(float*)", CUDA_OWN, Origin.LIBRARY),  # only a template argument
    ("void add_kernel<float>(float const*, float const*, float*, int)", CUDA_OWN, Origin.LIBRARY),
    (ADD, ATEN_NAMED, Origin.LIBRARY),  # ATen's add is never the candidate's kernel of the same name
    (SGEMM, CUBLAS_NAMED, Origin.LIBRARY),
    ("void cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_nt_align1>(cutlass_80_simt_sgemm_64x64_8x5_nt_align1::Params)",
     CUBLAS_NAMED, Origin.LIBRARY),
    ("vectorized_elementwise_kernel" + OWN_SUFFIX, ATEN_NAMED, Origin.OWN),
    (INDUCTOR, TRITON_OWN, Origin.INDUCTOR),
    (INDUCTOR, OwnIdentity(frozenset({INDUCTOR})), Origin.INDUCTOR),  # a copied Inductor name without the suffix
    (HGEMM, TRITON_OWN, Origin.LIBRARY),
    (ADD, TRITON_OWN, Origin.LIBRARY),
    (COPY, TRITON_OWN, Origin.DATA_MOVEMENT),
    (FILL, TRITON_OWN, Origin.DATA_MOVEMENT),
    (CAT, TRITON_OWN, Origin.DATA_MOVEMENT),
    (f"(anonymous namespace)::anon_kernel{OWN_SUFFIX}(float*)", OwnIdentity(frozenset({"anon_kernel" + OWN_SUFFIX})),
     Origin.OWN),
    (CAST, TRITON_OWN, Origin.DATA_MOVEMENT),
    (ARANGE, TRITON_OWN, Origin.DATA_MOVEMENT),
    (REDUCE, TRITON_OWN, Origin.LIBRARY),
    (NVJET, TRITON_OWN, Origin.LIBRARY),
    (SM80, TRITON_OWN, Origin.LIBRARY),
    ("Memcpy HtoD (Pageable -> Device)", TRITON_OWN, Origin.MEMCPY),
    ("Memset (Device)", TRITON_OWN, Origin.MEMCPY),
    ("Memcpy DtoD (Device -> Device)", TRITON_OWN, Origin.MEMCPY),
    ("Memcpy DtoH (Device -> Pageable)", TRITON_OWN, Origin.TO_HOST),
])
def test_kernel_origin(name, own, origin):
    assert kernel_origin(name, own) is origin


def test_a_name_without_the_suffix_is_never_own_even_when_listed():
    """The suffix is what no library kernel can have: an identity holding a bare name owns nothing."""
    assert kernel_origin("rmsnorm_kernel", OwnIdentity(frozenset({"rmsnorm_kernel"}))) is Origin.LIBRARY


def test_function_name_of_demangled_kernels():
    assert kernel_function_name("void add_kernel<float>(float const*, int)") == "add_kernel"
    assert kernel_function_name(COPY) == "vectorized_elementwise_kernel"
    assert kernel_function_name("rmsnorm_kernel") == "rmsnorm_kernel"


# --- strict --------------------------------------------------------------------------------------
def test_own_kernels_with_allocation_copies_and_casts_pass_strict():
    records = [rec(FILL, 2), rec("Memcpy HtoD (Pageable -> Device)", 1), rec(OWN_RMS, 80),
               rec(OWN_SUMSQ, 10), rec(COPY, 5), rec(CAT, 2)]
    judgement = judge_trace(records, TRITON_OWN, STRICT, LAUNCH)
    assert judgement.violations == []
    assert judgement.own_share == pytest.approx(90 / 98)  # the fill weighs nothing
    assert judgement.own_kernels == pytest.approx({OWN_RMS: 80 / 98, OWN_SUMSQ: 10 / 98})
    assert judgement.library_kernels[COPY] == pytest.approx(5 / 98)
    assert list(judgement.library_kernels)[0] == COPY  # largest share first


def test_library_kernels_break_strict_and_are_named():
    records = [rec(OWN_RMS, 5), rec(SGEMM, 60), rec(ADD, 30), rec(HGEMM, 5)]
    judgement = judge_trace(records, TRITON_OWN, STRICT, LAUNCH)
    assert kinds(judgement) == [K.POLICY]
    detail = judgement.violations[0].detail
    assert detail.startswith("library kernels ran in a strict task: ampere_sgemm_128x64_nn (60%)")
    assert "\n" not in detail and "…" in detail  # long names shortened


def test_reading_sizes_back_to_the_host_is_allowed():
    """A grouped GEMM reads its group sizes (a DtoH copy) to plan its launches."""
    records = [rec("Memcpy DtoH (Device -> Pageable)", 2), rec(OWN_RMS, 50)]
    assert judge_trace(records, TRITON_OWN, STRICT, LAUNCH).violations == []


def test_cuda_kernels_are_attributed_through_demangled_names():
    records = [rec(f"void add_kernel{OWN_SUFFIX}<float>(float const*, float const*, float*, int)", 40), rec(FILL, 1)]
    judgement = judge_trace(records, CUDA_OWN, STRICT, LAUNCH)
    assert judgement.violations == [] and judgement.own_share == pytest.approx(1.0)  # the fill weighs nothing


def test_no_own_kernel_ran():
    judgement = judge_trace([rec(ADD, 10), rec(COPY, 1)], TRITON_OWN, KB, LAUNCH)
    assert [v.detail.split(" (")[0] for v in judgement.violations] == ["no kernel of the candidate ran"]
    assert judge_trace([], TRITON_OWN, STRICT, LAUNCH).violations[0].detail == "no kernel of the candidate ran"


# --- kernelbench ---------------------------------------------------------------------------------
def test_kernelbench_allows_library_compute_when_own_kernels_carry_real_work():
    records = [rec(SGEMM, 70), rec(OWN_RMS, 30)]
    judgement = judge_trace(records, TRITON_OWN, KB, LAUNCH)
    assert judgement.violations == [] and judgement.library_kernels == {SGEMM: pytest.approx(0.7)}


def test_kernelbench_rejects_a_token_own_kernel():
    records = [rec(SGEMM, 98), rec(OWN_RMS, 2)]
    judgement = judge_trace(records, TRITON_OWN, KB, LAUNCH)
    assert kinds(judgement) == [K.POLICY] and "2.0% of GPU time" in judgement.violations[0].detail
    at_threshold = [rec(SGEMM, 100 * (1 - MIN_OWN_SHARE)), rec(OWN_RMS, 100 * MIN_OWN_SHARE)]
    assert judge_trace(at_threshold, TRITON_OWN, KB, LAUNCH).violations == []


def test_kernelbench_without_durations_does_not_guess_a_share():
    records = [rec(SGEMM, 0.0), rec(OWN_RMS, 0.0)]
    assert judge_trace(records, TRITON_OWN, KB, LAUNCH).violations == []


@pytest.mark.parametrize("policy", [STRICT, KB])
def test_inductor_kernels_break_strict_and_kernelbench(policy):
    records = [rec(OWN_RMS, 50), rec(INDUCTOR, 50), rec("triton_red_fused_mean_pow_1", 10)]
    judgement = judge_trace(records, TRITON_OWN, policy, LAUNCH)
    assert judgement.violations[0].kind is K.POLICY
    assert judgement.violations[0].detail.startswith("torch.compile/Inductor kernels ran: triton_poi_fused_add_0")


# --- streams, off ------------------------------------------------------------------------------
def test_kernels_off_the_launch_stream_are_side_streams():
    records = [rec(FILL, 1), rec(OWN_RMS, 50, stream=13), rec("Memcpy DtoD (Device -> Device)", 1, stream=9)]
    judgement = judge_trace(records, TRITON_OWN, STRICT, LAUNCH)
    assert kinds(judgement) == [K.SIDE_STREAM]
    assert f"stream(s) [13], not the launch stream 7: {OWN_RMS}" in judgement.violations[0].detail


def test_off_judges_nothing_but_still_measures():
    records = [rec(SGEMM, 75), rec(INDUCTOR, 25, stream=3)]
    judgement = judge_trace(records, TRITON_OWN, OFF, LAUNCH)
    assert judgement.violations == [] and judgement.own_share == 0.0
    assert judgement.library_kernels == {SGEMM: pytest.approx(0.75), INDUCTOR: pytest.approx(0.25)}


# --- CPU op log ----------------------------------------------------------------------------------
ALLOCATE_VIEW_COPY = ["aten.empty.memory_format", "aten.empty_like.default", "aten.empty_strided.default",
                      "aten.zeros.default", "aten.new_zeros.default", "aten.full.default", "aten.view.default",
                      "aten._unsafe_view.default", "aten.reshape.default", "aten.t.default", "aten.permute.default",
                      "aten.expand.default", "aten.unsqueeze.default", "aten.slice.Tensor", "aten.select.int",
                      "aten.detach.default", "aten.clone.default", "aten.copy_.default", "aten._to_copy.default",
                      "aten.fill_.Scalar", "aten.zero_.default", "aten.lift_fresh.default", "aten.arange.start",
                      "aten.split.Tensor", "aten.sym_size.int", "aten::contiguous", "aten.cat.default",
                      "aten._local_scalar_dense.default"]  # group_sizes.tolist() planning launches


def test_op_log_allocation_views_and_copies_pass_strict():
    assert judge_op_log(ALLOCATE_VIEW_COPY, STRICT) == []


def test_op_log_library_ops_break_strict_only():
    ops = ALLOCATE_VIEW_COPY + ["aten.mm.default", "aten.add.Tensor", "aten.mm.default", "aten::rsqrt",
                                "aten.mean.dim", "aten.mul.Tensor", "torchvision.nms.default"]
    (violation,) = judge_op_log(ops, STRICT)
    assert violation.kind is K.POLICY
    assert violation.detail.startswith("library ops ran in a strict task: aten.mm.default ×2")
    assert violation.detail.endswith("and 2 more")
    assert judge_op_log(ops, KB) == [] and judge_op_log(ops, OFF) == []


# --- strict: own kernels carry the work -----------------------------------------------------------
def test_a_permutation_by_torch_copy_beside_a_token_kernel_breaks_strict():
    """``x.t().contiguous()`` (a copy kernel, allowed data movement) does the task; the own kernel is a token."""
    records = [rec(COPY, 400.0), rec(OWN_RMS, 2.5)]
    judgement = judge_trace(records, TRITON_OWN, STRICT, LAUNCH)
    assert kinds(judgement) == [K.POLICY]
    assert judgement.violations[0].detail.startswith("torch data movement carries 100% of the candidate's GPU time")


def test_a_cast_before_an_own_kernel_passes_strict():
    """A full-size bf16 -> fp32 cast moves about as many bytes as the kernel after it: about half the time."""
    records = [rec(CAST, 60.0), rec(OWN_RMS, 55.0), rec(FILL, 1.5)]
    assert judge_trace(records, TRITON_OWN, STRICT, LAUNCH).violations == []


def test_autotune_benchmark_flushes_weigh_nothing():
    """``@triton.autotune`` benchmarks each config after do_bench's 256 MiB L2-flush fill: on a small
    config the fills are ~100x the own kernels' time, and a fill cannot carry a task's work. Copies
    still weigh: the same trace with the fills as copies breaks strict and kernelbench."""
    int_fill = FILL.replace("FillFunctor<float>", "FillFunctor<int>")
    records = [r for _ in range(6) for r in (rec(int_fill, 110.0), rec(OWN_RMS, 3.5))]
    for policy in (STRICT, KB):
        judgement = judge_trace(records, TRITON_OWN, policy, LAUNCH, calls=1)
        assert judgement.violations == [] and judgement.own_share == pytest.approx(1.0)
    as_copies = [rec(COPY, r.duration_us) if r.name == int_fill else r for r in records]
    assert kinds(judge_trace(as_copies, TRITON_OWN, STRICT, LAUNCH)) == [K.POLICY]
    assert kinds(judge_trace(as_copies, TRITON_OWN, KB, LAUNCH)) == [K.POLICY]


MASKED_FILL = ("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::"
               "(anonymous namespace)::masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{lambda()#1}::"
               "operator()() const::{lambda()#8}::operator()() const::{lambda(float, bool)#1}> >(int, "
               "at::native::gpu_kernel_impl_nocast<at::native::(anonymous namespace)::masked_fill_kernel("
               "at::TensorIterator&, c10::Scalar const&)::{lambda()#1}::operator()() const::{lambda()#8}::operator()() "
               "const::{lambda(float, bool)#1}> const&)")
INDEX_FILL = "void at::native::index_fill_kernel_impl<at::native::OpaqueType<4> >(at::TensorIterator&, long, long, long, long)"


@pytest.mark.parametrize("name", [MASKED_FILL, INDEX_FILL], ids=["masked_fill", "index_fill"])
def test_kernels_that_compute_are_not_fills_for_a_fill_in_their_name(name):
    """``masked_fill`` and ``index_fill`` compute where to write from a mask or an index: library
    work that weighs, whose names hold the letters of fill's own kernel inside longer identifiers."""
    records = [rec(name, 60.0), rec(OWN_RMS, 20.0)]
    assert kernel_origin(name, TRITON_OWN) is Origin.LIBRARY
    assert kinds(judge_trace(records, TRITON_OWN, STRICT, LAUNCH)) == [K.POLICY]
    assert kernel_origin(FILL, TRITON_OWN) is Origin.DATA_MOVEMENT  # fill's own functor still is one


def test_the_strict_share_threshold():
    def judged(own_us: float) -> list:
        moved = 100.0
        records = [rec(COPY, moved + LAUNCH_FLOOR_US), rec(OWN_RMS, own_us + LAUNCH_FLOOR_US)]
        return judge_trace(records, TRITON_OWN, STRICT, LAUNCH).violations

    at = MIN_STRICT_OWN_SHARE * 100.0 / (1 - MIN_STRICT_OWN_SHARE)  # own / (own + 100) == the minimum
    assert judged(at * 1.01) == [] and kinds_of(judged(at * 0.99)) == [K.POLICY]


def test_tiny_calls_are_not_judged_on_shares():
    """Every kernel of a tiny config is all launch floor: no share is formed there."""
    records = [rec(COPY, 4.0), rec(FILL, 3.0), rec(OWN_RMS, 2.2)]
    assert judge_trace(records, TRITON_OWN, STRICT, LAUNCH).violations == []


def test_memory_copies_count_as_data_movement_in_the_share():
    records = [rec("Memcpy DtoD (Device -> Device)", 300.0), rec(OWN_RMS, 3.0)]
    assert kinds(judge_trace(records, TRITON_OWN, STRICT, LAUNCH)) == [K.POLICY]
    assert judge_trace(records, TRITON_OWN, KB, LAUNCH).violations[0].detail.startswith("the candidate's kernels carry")


def kinds_of(violations) -> list[K]:
    return [v.kind for v in violations]


# --- strict: device-to-host copies of input-sized data ------------------------------------------------
def to_host(nbytes: int | None, us: float = 5.0) -> KernelRecord:
    return KernelRecord(name="Memcpy DtoH (Device -> Pageable)", stream=LAUNCH, duration_us=us, bytes=nbytes)


def test_copying_inputs_to_the_host_breaks_strict():
    limit = host_read_limit(64 << 20)  # a 64 MiB input
    records = [to_host(64 << 20, 20000.0), to_host(64 << 20, 20000.0), rec(OWN_RMS, 5000.0)]
    judgement = judge_trace(records, TRITON_OWN, STRICT, LAUNCH, host_limit=limit)
    assert judgement.to_host_bytes == 128 << 20
    assert [v.detail for v in judgement.violations if "host compute" in v.detail][0].startswith(
        "128.0 MiB copied from the device to the host in a strict task")


def test_many_small_copies_add_up():
    limit = host_read_limit(4000)
    records = [to_host(256, us=2.0) for _ in range(32)] + [rec(OWN_RMS, 3.0)]
    assert kinds(judge_trace(records, TRITON_OWN, STRICT, LAUNCH, host_limit=limit)) == [K.POLICY]


def test_reading_group_sizes_and_scalars_passes():
    limit = host_read_limit(64 << 20)
    records = [to_host(512), to_host(4), rec(OWN_RMS, 500.0)]
    assert judge_trace(records, TRITON_OWN, STRICT, LAUNCH, host_limit=limit).violations == []
    # a one-element config still may read a scalar back
    assert judge_trace([to_host(4), rec(OWN_RMS, 3.0)], TRITON_OWN, STRICT, LAUNCH,
                       host_limit=host_read_limit(4)).violations == []


def test_copies_of_unknown_size_are_bounded_from_below_by_their_duration():
    records = [to_host(None, 2000.0), rec(OWN_RMS, 5000.0)]  # >= 2 MB at the slowest path's 1 GB/s
    assert kinds(judge_trace(records, TRITON_OWN, STRICT, LAUNCH, host_limit=host_read_limit(1 << 20))) == [K.POLICY]


def test_host_copies_are_judged_in_strict_only():
    records = [to_host(64 << 20, 20000.0), rec(OWN_RMS, 5000.0)]
    assert judge_trace(records, TRITON_OWN, KB, LAUNCH, host_limit=host_read_limit(1 << 20)).violations == []


# --- CPU evidence: launches, ops inside launches, hand-outs, shares in bytes -----------------------
CAND = "/work/candidate.py"


def cpu(**kwargs) -> CpuCallEvidence:
    base = dict(ops=["aten.empty_like.default"], ops_in_kernels=[], launches=[[["k", CAND, 8000]]], hand_outs=[],
                moved_bytes=0, compiled_graphs=0)
    base.update(kwargs)
    return CpuCallEvidence(**base)


@pytest.mark.parametrize("policy", [STRICT, KB])
def test_every_call_must_launch_an_own_kernel_on_the_cpu(policy):
    assert judge_cpu_call(cpu(), policy, CAND) == []
    other_file = cpu(launches=[[["k", "/site-packages/lib/kernels.py", 8000]]])
    violation, *share = judge_cpu_call(other_file, policy, CAND)
    assert violation.detail == "no kernel of the candidate ran (launched: k)"
    assert len(share) == (1 if policy is STRICT else 0)  # and in a strict task, none of the bytes are its own
    second = cpu(launches=[[["k", CAND, 8000]], []])
    assert judge_cpu_call(second, policy, CAND)[0].detail.startswith("no kernel of the candidate ran in call 2 of 2")


def test_ops_inside_launches_are_violations_under_every_gated_policy():
    evidence = cpu(ops_in_kernels=["aten.add.Tensor", "aten.copy_.default"])
    for policy in (STRICT, KB):
        (violation,) = judge_cpu_call(evidence, policy, CAND)
        assert violation.detail.startswith("torch ops ran inside a Triton kernel launch")
    assert judge_cpu_call(evidence, OFF, CAND) == []


def test_tensors_handed_to_host_code_break_strict():
    limit = host_read_limit(4000)
    evidence = cpu(hand_outs=[("numpy", 4000), ("numpy", 4000)])
    (violation,) = judge_cpu_call(evidence, STRICT, CAND, host_limit=limit)
    assert "7.8 KiB of tensor data handed to host code" in violation.detail and ".numpy() ×2" in violation.detail
    assert judge_cpu_call(cpu(hand_outs=[("tolist", 64)]), STRICT, CAND, host_limit=limit) == []
    assert judge_cpu_call(evidence, KB, CAND, host_limit=limit) == []


def test_cpu_share_in_bytes():
    token = cpu(launches=[[["k", CAND, 8]]], moved_bytes=30720)
    assert judge_cpu_call(token, STRICT, CAND)[0].detail.startswith("torch's copies and fills move 100% of the bytes")
    cast_first = cpu(launches=[[["k", CAND, 24000]]], moved_bytes=24000)
    assert judge_cpu_call(cast_first, STRICT, CAND) == []
    assert judge_cpu_call(token, KB, CAND) == []


def test_bytes_moved_by_code_of_other_files_inside_launches_are_not_the_candidates():
    """A launch of the candidate's whose loads and stores come from a library's ``@triton.jit``
    function (``sandbox.evidence`` counts each to the file of the code that issued it)."""
    wrapped = cpu(launches=[[["k", CAND, 0], ["k", "/site-packages/lib/kernels.py", 30720]]], moved_bytes=0)
    (violation,) = judge_cpu_call(wrapped, STRICT, CAND)
    assert "code of other files in launches 100%" in violation.detail and "candidate's kernels 0%" in violation.detail
    shared = cpu(launches=[[["k", CAND, 8000], ["k", "/site-packages/lib/kernels.py", 8000]]], moved_bytes=0)
    assert judge_cpu_call(shared, STRICT, CAND) == []  # half its own: above the strict share
    assert judge_cpu_call(wrapped, KB, CAND) == []


def test_dynamo_graphs_in_the_candidates_process_break_gated_policies():
    for policy in (STRICT, KB):
        assert judge_cpu_call(cpu(compiled_graphs=2), policy, CAND)[0].detail.startswith("torch.compile compiled 2")
