"""The compute-sanitizer report parser on real reports, each quoted from where it was published.

Lines elided from a published report are marked by a comment; nothing was reworded. The formats
differ across versions (``at 0x70 in file:line:kernel`` from cuda-memcheck and early compute-
sanitizer, ``at kernel+0x70 in file:line`` since 2022), which is why several sources are kept.
"""

from __future__ import annotations

from kernellab.sandbox.sanitizer_report import MEMORY_SAFETY, RACE, parse, records, short_kernel

# NVIDIA/numba-cuda's predecessor, numba/numba#7559 (2021, compute-sanitizer of CUDA 11.x, memcheck).
NUMBA_7559 = """\
========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at 0x9a0 in cudapy::__main__::CalcuArea_241[abi:cw51cXTLSUwv1kAPW1tQPAP9CY9GJAHUqIFJIBltW60OjnB1KwUDHQV1kNNAcQ_2fkQgNFHeY_2fJCGgXiDPuFYTAA_3d_3d](long long, long long, long long, long long, Array<double, (int)1, C, mutable, aligned>, Array<double, (int)1, C, mutable, aligned>, Array<double, (int)1, C, mutable, aligned>, Array<float, (int)2, C, mutable, aligned>)
=========     by thread (1,1,0) in block (0,0,0)
=========     Address 0x7f7767200660 is out of bounds
=========     Saved host backtrace up to driver entry point at kernel launch time
=========     Host Frame:cuLaunchKernel [0x8a600a]
=========                in /usr/lib/x86_64-linux-gnu/libcuda.so.1
"""

# gkeyllorg/gkeyll#738 (2025, memcheck on Perlmutter): the current "at kernel+0x.." format, with the
# nearest allocation named. The record's header line is cut off in the published text; it is the
# one the pull request describes (an out-of-bounds read in a reduction).
GKEYLL_738 = """\
========= Invalid __global__ read of size 8 bytes
=========     at gkyl_array_integrate_op_none_1x_ser_p1+0x330
=========     by thread (57,0,0) in block (0,0,0)
=========     Address 0x7f7640a003a0 is out of bounds
=========     and is 96 bytes before the nearest allocation at 0x7f7640a00400 of size 96 bytes
=========     Device Frame:void array_integrate_blockRedAtomic_cub<(unsigned int)256>(gkyl_array_integrate *, const gkyl_array *, double, const gkyl_array *, gkyl_range, gkyl_range, double *)+0x39d0
=========     Saved host backtrace up to driver entry point at kernel launch time
=========     Host Frame: [0x2f26ef]
=========                in /usr/lib64/libcuda.so.1
"""

# An old cuda-memcheck report (pastebin.com/AW9vmjFs, 2014): the "at 0x.. in file:line:kernel" format.
# Four records of one access by four threads: one finding, counted four times.
CUDA_MEMCHECK_2014 = """\
========= CUDA-MEMCHECK
========= Invalid __global__ read of size 8
=========     at 0x000000c8 in /home/ubuntu/Test0001/Debug/../src/my_helper.cuh:75:void vector_projection<double>(double*, int)
=========     by thread (9,0,0) in block (0,0,0)
=========     Address 0x000370e8 is out of bounds
=========
========= Invalid __global__ read of size 8
=========     at 0x000000c8 in /home/ubuntu/Test0001/Debug/../src/my_helper.cuh:75:void vector_projection<double>(double*, int)
=========     by thread (8,0,0) in block (0,0,0)
=========     Address 0x000370e0 is out of bounds
=========
========= Invalid __global__ read of size 8
=========     at 0x000000c8 in /home/ubuntu/Test0001/Debug/../src/my_helper.cuh:75:void vector_projection<double>(double*, int)
=========     by thread (7,0,0) in block (0,0,0)
=========     Address 0x000370d8 is out of bounds
=========
========= Invalid __global__ read of size 8
=========     at 0x000000c8 in /home/ubuntu/Test0001/Debug/../src/my_helper.cuh:75:void vector_projection<double>(double*, int)
=========     by thread (6,0,0) in block (0,0,0)
=========     Address 0x000370d0 is out of bounds
=========
"""

# NVIDIA/cccl#2104 (2024, CUDA 12.2, initcheck).
CCCL_2104 = """\
========= Uninitialized __global__ memory read of size 4 bytes
=========     at 0xa0a50 in /usr/local/cuda-12.2/targets/x86_64-linux/include/cub/thread/thread_load.cuh:272:ThreadLoad<LOAD_CG,const unsigned int *>
=========     by thread (30,0,0) in block (1,0,0)
=========     Address 0x7f65e5204710
"""

# NVIDIA/cccl#1890 (2024, CUDA 12.4, initcheck): a host copy out of device memory nobody wrote.
CCCL_1890 = """\
========= COMPUTE-SANITIZER
========= Host API memory access error at host access to 0x7f0e69430200 of size 16 bytes
=========     Uninitialized access at 0x7f0e69430200 on access by cudaMemcpy source
=========     Saved host backtrace up to driver entry point at error
=========     Host Frame: [0x2e8fa0]
=========                in /usr/lib/x86_64-linux-gnu/libcuda.so.1
"""

# ORNL/HeCBench#126 (2025, CUDA 12.9, racecheck): an error-level race with hazard counts per pair.
# The report goes on with warning-level records, cut off in the published text.
HECBENCH_126 = """\
========= COMPUTE-SANITIZER
========= Error: Race reported between Read access at ckMedian(const uchar4 *, unsigned int *, int, int, int)+0x9d0
=========     and Write access at ckMedian(const uchar4 *, unsigned int *, int, int, int)+0x270 [288 hazards]
=========     and Write access at ckMedian(const uchar4 *, unsigned int *, int, int, int)+0x280 [10515 hazards]
=========     and Write access at ckMedian(const uchar4 *, unsigned int *, int, int, int)+0x300 [288 hazards]
=========     and Write access at ckMedian(const uchar4 *, unsigned int *, int, int, int)+0x360 [10944 hazards]
=========
"""

# kokkos/kokkos#6217 (2023, racecheck, built with -G): a warning-level race and the summary line.
KOKKOS_6217 = """\
========= COMPUTE-SANITIZER
========= Warning: Race reported between Read access at 0x1f20 in /home/tccleve/Kokkos/install/include/Cuda/Kokkos_Cuda_Parallel_Range.hpp:249:Kokkos::Impl::ParallelReduce<Kokkos::Impl::CombinedFunctorReducer<main::[lambda(int, double &) (instance 1)], Kokkos::Impl::FunctorAnalysis<Kokkos::Impl::FunctorPatternInterface::REDUCE, Kokkos::RangePolicy<Kokkos::Cuda>, main::[lambda(int, double &) (instance 1)], double>::Reducer, void>, Kokkos::RangePolicy<Kokkos::Cuda>, Kokkos::Cuda, Kokkos::Cuda>::operator ()() const
=========     and Write access at 0x14b0 in /home/tccleve/Kokkos/install/include/Cuda/Kokkos_Cuda_ReduceScan.hpp:349:Kokkos::Impl::CudaReductionsFunctor<Kokkos::Impl::FunctorAnalysis<Kokkos::Impl::FunctorPatternInterface::REDUCE, Kokkos::RangePolicy<Kokkos::Cuda>, main::[lambda(int, double &) (instance 1)], double>::Reducer, (bool)0, (bool)0>::scalar_intra_block_reduction(const Kokkos::Impl::FunctorAnalysis<Kokkos::Impl::FunctorPatternInterface::REDUCE, Kokkos::RangePolicy<Kokkos::Cuda>, main::[lambda(int, double &) (instance 1)], double>::Reducer &, double, bool, double *, int, double *) [4 hazards]
=========
Test complete
========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)
"""

# NVIDIA/cccl#1903 (2024, CUDA 12.4, racecheck): the current format with the source location.
CCCL_1903 = """\
  ========= COMPUTE-SANITIZER
  ========= Error: Race reported between Write access at void cub::CUB_200500_600_700_800_NS::BlockStore<float, (int)64, (int)1, (cub::CUB_200500_600_700_800_NS::BlockStoreAlgorithm)4, (int)1, (int)1, (int)0>::StoreInternal<(cub::CUB_200500_600_700_800_NS::BlockStoreAlgorithm)4, (int)0>::Store<float *>(T1, float (&)[1], int)+0xa70 in /home/coder/cccl/cub/cub/block/block_store.cuh:980
"""

# This workplace's H100 (compute-sanitizer 2025.3.1, torch 2.11, triton 3.6), memcheck on
# tests/adversarial/candidates/vector_add/tail_store_past_end.py through the sanitize stage's process
# (benchmarks/sanitize_cost.py --keep). 2025.3 says "Access to" where earlier versions said
# "Address", and writes sizes with thousands separators. Records 3 to 23 elided: 24 in all.
H100_MEMCHECK = """\
========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at _add_tail_unmasked+0x1a0 in tail_store_past_end.py:25
=========     by thread (104,0,0) in block (7,0,0)
=========     Access to 0x7fc558822fa0 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7fc558822000 of size 4,000 bytes
========= 
========= Invalid __global__ write of size 4 bytes
=========     at _add_tail_unmasked+0x1a0 in tail_store_past_end.py:25
=========     by thread (105,0,0) in block (7,0,0)
=========     Access to 0x7fc558822fa4 is out of bounds
=========     and is 5 bytes after the nearest allocation at 0x7fc558822000 of size 4,000 bytes
========= 
========= Invalid __global__ write of size 4 bytes
=========     at _add_tail_unmasked+0x1a0 in tail_store_past_end.py:25
=========     by thread (127,0,0) in block (7,0,0)
=========     Access to 0x7fc558822ffc is out of bounds
=========     and is 93 bytes after the nearest allocation at 0x7fc558822000 of size 4,000 bytes
========= 
========= Error: process didn't terminate successfully
========= Target application returned an error
========= ERROR SUMMARY: 24 errors
"""

# The same machine, initcheck on tests/adversarial/candidates/vector_add/scratch_assumed_zero.py: 513
# errors, 200 printed (--print-limit 200), the rest dropped; records 3 to 200 elided.
H100_INITCHECK = """\
========= COMPUTE-SANITIZER
========= Uninitialized __global__ memory read of size 4 bytes
=========     at _add_with_carry+0x250 in scratch_assumed_zero.py:26
=========     by thread (96,0,0) in block (0,0,0)
=========     Address 0x7fb46ae00000
========= 
========= Uninitialized __global__ memory read of size 4 bytes
=========     at _add_with_carry+0x250 in scratch_assumed_zero.py:26
=========     by thread (97,0,0) in block (0,0,0)
=========     Address 0x7fb46ae00000
========= 
========= Warning: Error buffer overflow has been detected. Some records have been dropped
========= 
========= ERROR SUMMARY: 513 errors
========= ERROR SUMMARY: 312 errors were not printed. Use --print-limit option to adjust the number of printed errors
========= 
========= 768 errors were skipped (error buffer overflow).
"""

# The same machine, a clean racecheck run (examples/rmsnorm_triton.py on normalization/rmsnorm).
H100_RACECHECK_CLEAN = """\
========= COMPUTE-SANITIZER
========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)
"""

# gunrock/gunrock#844 (2021, cuda-memcheck racecheck in hazard mode): a warning-level hazard.
GUNROCK_844 = """\
========= WARN:(Warp Level Programming) Potential RAW hazard detected at __shared__ 0xf4 in block (0, 0, 0) :
=========     Write Thread (24, 0, 0) at 0x00001ab0 in /home/angeil/mario/gunrock/examples/sssp/../../gunrock/util/scan/warp_scan.cuh:146:_ZN7gunrock5oprtr4CULL6KernelE
"""


def test_memcheck_out_of_bounds_write_in_the_2021_format():
    report = parse("memcheck", NUMBA_7559)
    assert report.tool_failure is None and len(report.findings) == 1
    finding = report.findings[0]
    assert finding.kind == MEMORY_SAFETY and finding.what == "Invalid __global__ write of size 4 bytes"
    assert finding.kernel.startswith("cudapy::__main__::CalcuArea_241") and "(" not in finding.kernel
    assert finding.why == "out of bounds"
    assert finding.line().startswith("memcheck: Invalid __global__ write of size 4 bytes in kernel cudapy::")


def test_memcheck_read_in_the_current_format_names_the_nearest_allocation():
    finding = parse("memcheck", GKEYLL_738).findings[0]
    assert finding.kernel == "gkyl_array_integrate_op_none_1x_ser_p1"
    assert finding.why == "out of bounds, 96 bytes before an allocation of 96 bytes"
    assert finding.what == "Invalid __global__ read of size 8 bytes"


def test_one_access_by_many_threads_is_one_finding_with_its_count():
    report = parse("memcheck", CUDA_MEMCHECK_2014)
    assert len(report.findings) == 1
    finding = report.findings[0]
    assert finding.count == 4 and finding.kernel == "vector_projection<double>"
    assert "4 times" in finding.line()


def test_initcheck_uninitialised_global_read():
    finding = parse("initcheck", CCCL_2104).findings[0]
    assert finding.kind == MEMORY_SAFETY
    assert finding.what == "Uninitialized __global__ memory read of size 4 bytes"
    assert finding.kernel == "ThreadLoad<LOAD_CG,const unsigned int *>"


def test_initcheck_host_copy_of_uninitialised_memory():
    finding = parse("initcheck", CCCL_1890).findings[0]
    assert finding.kind == MEMORY_SAFETY and finding.what.startswith("Host API memory access error")


def test_racecheck_error_counts_the_hazards_of_every_pair():
    report = parse("racecheck", HECBENCH_126)
    assert len(report.findings) == 1 and not report.warnings
    finding = report.findings[0]
    assert finding.kind == RACE and finding.kernel == "ckMedian"
    assert finding.what == "shared-memory race between Read and Write access"
    assert finding.why == f"{288 + 10515 + 288 + 10944} hazards"


def test_racecheck_warnings_are_kept_apart_and_the_summary_is_read():
    report = parse("racecheck", KOKKOS_6217)
    assert not report.findings and len(report.warnings) == 1
    assert report.summary_errors == 0 and report.clean
    assert report.warnings[0].kernel.startswith("Kokkos::Impl::ParallelReduce<")


def test_racecheck_error_with_source_location_and_indented_report():
    finding = parse("racecheck", CCCL_1903, prefix="  =========").findings[0]
    assert finding.kind == RACE
    kernel, location = finding.kernel.split(" at ")
    assert kernel.startswith("cub::CUB_200500_600_700_800_NS::BlockSto") and len(kernel) <= 120
    assert kernel.endswith("::Store<float *>") and location == "/home/coder/cccl/cub/cub/block/block_store.cuh:980"


def test_racecheck_hazard_mode_warning_is_not_an_error():
    report = parse("racecheck", GUNROCK_844)
    assert not report.findings and report.warnings[0].what == "shared-memory RAW hazard"
    assert report.warnings[0].kernel == "_ZN7gunrock5oprtr4CULL6KernelE"


def test_h100_memcheck_report_of_a_store_past_the_end():
    report = parse("memcheck", H100_MEMCHECK)
    assert report.summary_errors == 24 and len(report.findings) == 1
    assert report.findings[0].line() == (
        "memcheck: Invalid __global__ write of size 4 bytes in kernel _add_tail_unmasked at tail_store_past_end.py:25 "
        "(out of bounds, 1 bytes after an allocation of 4000 bytes, 3 times)")


def test_h100_initcheck_report_counts_the_errors_once_and_takes_dropped_records_in_its_stride():
    report = parse("initcheck", H100_INITCHECK)
    assert report.summary_errors == 513 and report.tool_failure is None
    assert [f.line() for f in report.findings] == [
        "initcheck: Uninitialized __global__ memory read of size 4 bytes in kernel _add_with_carry at "
        "scratch_assumed_zero.py:26 (2 times)"]


def test_h100_clean_racecheck():
    report = parse("racecheck", H100_RACECHECK_CLEAN)
    assert report.clean and report.summary_errors == 0 and not report.warnings


def test_a_clean_report_is_clean_and_a_report_without_a_summary_is_not():
    clean = parse("memcheck", "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n")
    assert clean.clean and clean.summary_errors == 0
    cut_short = parse("memcheck", "========= COMPUTE-SANITIZER\n")
    assert not cut_short.clean and not cut_short.findings


def test_errors_counted_in_a_format_the_parser_does_not_know_are_still_findings():
    text = ("========= COMPUTE-SANITIZER\n========= Some New Kind of Error in a future version\n"
            "=========     at k+0x10\n========= ERROR SUMMARY: 1 error\n")
    report = parse("memcheck", text)
    assert len(report.findings) == 1 and "Some New Kind of Error" in report.findings[0].why


def test_the_tool_refusing_the_device_is_a_tool_failure_not_a_finding():
    # What compute-sanitizer said on a gVisor H200 of this workplace (KINDS.md, 2026-11-04).
    text = "========= COMPUTE-SANITIZER\n========= Error: Device not supported. Please refer to the documentation.\n"
    report = parse("memcheck", text)
    assert report.tool_failure and "Device not supported" in report.tool_failure and not report.findings


def test_text_outside_the_prefix_is_ignored():
    # the candidate's own prints never reach the tool's log file; even if they did, an unprefixed
    # line is not a record
    text = "Invalid __global__ write of size 4 bytes\nERROR SUMMARY: 0 errors\n========= ERROR SUMMARY: 2 errors\n"
    assert parse("memcheck", text).summary_errors == 2
    assert records("=========     orphan detail\n") == [["orphan detail"]]


def test_kernel_names_lose_return_types_and_parameters():
    assert short_kernel("void foo<int, 2>(int*)") == "foo<int, 2>"
    assert short_kernel("_add_kernel") == "_add_kernel"
    assert short_kernel("std::iterator_traits<T2>::value_type cub::X::ThreadLoad<(cub::M)5, const int *>(T2)") \
        == "cub::X::ThreadLoad<(cub::M)5, const int *>"
