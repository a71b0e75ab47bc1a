"""Judging GPU traces and CPU op logs, with kernel names as CUPTI reports them."""

from __future__ import annotations

import pytest

from kernellab.evaluate.policy import (
    MIN_OWN_SHARE, KernelRecord, Origin, judge_op_log, judge_trace, kernel_function_name, kernel_origin,
)
from kernellab.evaluate.static_scan import OwnKernels
from kernellab.evaluate.verdict import ViolationKind as K
from kernellab.tasks.model import Policy

STRICT, KB, OFF = Policy.STRICT, Policy.KERNELBENCH, Policy.OFF
LAUNCH = 7

TRITON_OWN = OwnKernels(triton=frozenset({"rmsnorm_kernel", "_sum_of_squares"}))
CUDA_OWN = OwnKernels(cuda=frozenset({"add_kernel", "scale_kernel"}))

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
    ("rmsnorm_kernel", TRITON_OWN, Origin.OWN),
    ("rmsnorm_kernel_0d1d2de", TRITON_OWN, Origin.OWN),  # Triton 2.x signature suffix
    ("rmsnorm_kernel_backward", TRITON_OWN, Origin.LIBRARY),  # another function, not a suffix
    ("void add_kernel<float>(float const*, float const*, float*, int)", CUDA_OWN, Origin.OWN),
    ("add_kernel(float const*, float const*, float*, int)", CUDA_OWN, Origin.OWN),
    ("scale_kernel", CUDA_OWN, Origin.OWN),  # extern "C": unmangled
    ("void my_ns::(anonymous namespace)::add_kernel<__half, 4>(__half*, int)", CUDA_OWN, Origin.OWN),
    ("_Z10add_kernelPKfS0_Pfi", CUDA_OWN, Origin.OWN),  # mangled
    ("void other_kernel<add_kernel>(float*)", CUDA_OWN, Origin.LIBRARY),  # own name only as a template argument
    (INDUCTOR, TRITON_OWN, Origin.INDUCTOR),
    (INDUCTOR, OwnKernels(triton=frozenset({INDUCTOR})), Origin.INDUCTOR),  # a copied Inductor kernel is not own
    (SGEMM, OwnKernels(triton=frozenset({SGEMM})), Origin.LIBRARY),  # a vendor name cannot be claimed
    (HGEMM, TRITON_OWN, Origin.LIBRARY),
    (ADD, TRITON_OWN, Origin.LIBRARY),
    (COPY, TRITON_OWN, Origin.DATA_MOVEMENT),
    (FILL, TRITON_OWN, Origin.DATA_MOVEMENT),
    (CAT, TRITON_OWN, Origin.DATA_MOVEMENT),
    ("(anonymous namespace)::anon_kernel(float*)", OwnKernels(cuda=frozenset({"anon_kernel"})), Origin.OWN),
    (CAST, TRITON_OWN, Origin.DATA_MOVEMENT),
    (ARANGE, TRITON_OWN, Origin.DATA_MOVEMENT),
    (REDUCE, TRITON_OWN, Origin.LIBRARY),
    (NVJET, TRITON_OWN, Origin.LIBRARY),
    (SM80, TRITON_OWN, Origin.LIBRARY),
    ("Memcpy HtoD (Pageable -> Device)", TRITON_OWN, Origin.MEMCPY),
    ("Memset (Device)", TRITON_OWN, Origin.MEMCPY),
    ("Memcpy DtoH (Device -> Pageable)", TRITON_OWN, Origin.MEMCPY),
])
def test_kernel_origin(name, own, origin):
    assert kernel_origin(name, own) is origin


def test_function_name_of_demangled_kernels():
    assert kernel_function_name("void add_kernel<float>(float const*, int)") == "add_kernel"
    assert kernel_function_name(COPY) == "vectorized_elementwise_kernel"
    assert kernel_function_name("rmsnorm_kernel") == "rmsnorm_kernel"


# --- strict --------------------------------------------------------------------------------------
def test_own_kernels_with_allocation_copies_and_casts_pass_strict():
    records = [rec(FILL, 2), rec("Memcpy HtoD (Pageable -> Device)", 1), rec("rmsnorm_kernel", 80),
               rec("_sum_of_squares", 10), rec(COPY, 5), rec(CAT, 2)]
    judgement = judge_trace(records, TRITON_OWN, STRICT, LAUNCH)
    assert judgement.violations == []
    assert judgement.own_share == pytest.approx(0.9)
    assert judgement.own_kernels == pytest.approx({"rmsnorm_kernel": 0.8, "_sum_of_squares": 0.1})
    assert judgement.library_kernels[COPY] == pytest.approx(0.05)
    assert list(judgement.library_kernels)[0] == COPY  # largest share first


def test_library_kernels_break_strict_and_are_named():
    records = [rec("rmsnorm_kernel", 5), rec(SGEMM, 60), rec(ADD, 30), rec(HGEMM, 5)]
    judgement = judge_trace(records, TRITON_OWN, STRICT, LAUNCH)
    assert kinds(judgement) == [K.POLICY]
    detail = judgement.violations[0].detail
    assert detail.startswith("library kernels ran in a strict task: ampere_sgemm_128x64_nn (60%)")
    assert "\n" not in detail and "…" in detail  # long names shortened


def test_reading_sizes_back_to_the_host_is_allowed():
    """A grouped GEMM reads its group sizes (a DtoH copy) to plan its launches."""
    records = [rec("Memcpy DtoH (Device -> Pageable)", 2), rec("rmsnorm_kernel", 50)]
    assert judge_trace(records, TRITON_OWN, STRICT, LAUNCH).violations == []


def test_cuda_kernels_are_attributed_through_demangled_names():
    records = [rec("void add_kernel<float>(float const*, float const*, float*, int)", 40), rec(FILL, 1)]
    judgement = judge_trace(records, CUDA_OWN, STRICT, LAUNCH)
    assert judgement.violations == [] and judgement.own_share == pytest.approx(40 / 41)


def test_no_own_kernel_ran():
    judgement = judge_trace([rec(ADD, 10), rec(COPY, 1)], TRITON_OWN, KB, LAUNCH)
    assert [v.detail.split(" (")[0] for v in judgement.violations] == ["no kernel of the candidate ran"]
    assert judge_trace([], TRITON_OWN, STRICT, LAUNCH).violations[0].detail == "no kernel of the candidate ran"


# --- kernelbench ---------------------------------------------------------------------------------
def test_kernelbench_allows_library_compute_when_own_kernels_carry_real_work():
    records = [rec(SGEMM, 70), rec("rmsnorm_kernel", 30)]
    judgement = judge_trace(records, TRITON_OWN, KB, LAUNCH)
    assert judgement.violations == [] and judgement.library_kernels == {SGEMM: pytest.approx(0.7)}


def test_kernelbench_rejects_a_token_own_kernel():
    records = [rec(SGEMM, 98), rec("rmsnorm_kernel", 2)]
    judgement = judge_trace(records, TRITON_OWN, KB, LAUNCH)
    assert kinds(judgement) == [K.POLICY] and "2.0% of GPU time" in judgement.violations[0].detail
    at_threshold = [rec(SGEMM, 100 * (1 - MIN_OWN_SHARE)), rec("rmsnorm_kernel", 100 * MIN_OWN_SHARE)]
    assert judge_trace(at_threshold, TRITON_OWN, KB, LAUNCH).violations == []


def test_kernelbench_without_durations_does_not_guess_a_share():
    records = [rec(SGEMM, 0.0), rec("rmsnorm_kernel", 0.0)]
    assert judge_trace(records, TRITON_OWN, KB, LAUNCH).violations == []


@pytest.mark.parametrize("policy", [STRICT, KB])
def test_inductor_kernels_break_strict_and_kernelbench(policy):
    records = [rec("rmsnorm_kernel", 50), rec(INDUCTOR, 50), rec("triton_red_fused_mean_pow_1", 10)]
    judgement = judge_trace(records, TRITON_OWN, policy, LAUNCH)
    assert judgement.violations[0].kind is K.POLICY
    assert judgement.violations[0].detail.startswith("torch.compile/Inductor kernels ran: triton_poi_fused_add_0")


# --- streams, off ------------------------------------------------------------------------------
def test_kernels_off_the_launch_stream_are_side_streams():
    records = [rec(FILL, 1), rec("rmsnorm_kernel", 50, stream=13), rec("Memcpy DtoD (Device -> Device)", 1, stream=9)]
    judgement = judge_trace(records, TRITON_OWN, STRICT, LAUNCH)
    assert kinds(judgement) == [K.SIDE_STREAM]
    assert "stream(s) [13], not the launch stream 7: rmsnorm_kernel" in judgement.violations[0].detail


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
