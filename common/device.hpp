/// \file device.hpp
/// \brief The GPU's facts and its own measured ceilings, which every figure is set beside.
///
/// A bandwidth means little alone: "2710 GB/s" becomes "2710 GB/s = 91% of copy" when set beside
/// what a device-to-device cudaMemcpy reaches on this very GPU. Likewise a GFLOP/s figure is set
/// beside cuBLAS SGEMM (FP32) on this GPU. The ceilings are measured once per process; the
/// grader measures them once per grade run and hands them to every checker through the
/// environment (WORKBOOK_COPY_GBS, WORKBOOK_SGEMM_GFLOPS, WORKBOOK_TF32_GFLOPS), so all labs use the
/// same figures. Lab 05's tensor-core steps are set beside cuBLAS in TF32 on the tensor cores.
#pragma once

#include <cstddef>
#include <string>

namespace workbook {

/// \brief Whether there is a GPU to run on, and if not, why.
struct DeviceProbe {
    /// The outcome of the probe.
    enum class Status { ok, no_device, driver_too_old, error };
    Status status = Status::error;  ///< what was found
    std::string message;            ///< a sentence for the user when status is not ok
    int driver_version = 0;         ///< CUDA version the driver supports, e.g. 13000 (0 = none)
    int runtime_version = 0;        ///< CUDA runtime version of this build, e.g. 13000
};

/// \brief Looks for a usable CUDA device. Never throws.
///
/// Tells apart "no CUDA device found" from a driver too old for this runtime, and names both
/// versions in the second case.
/// \snippet grading/judge/device_query.cpp probe
DeviceProbe probe_device();

/// \brief Facts about the current device.
struct DeviceFacts {
    int index = 0;                 ///< CUDA device number
    std::string name;              ///< e.g. "NVIDIA H100 80GB HBM3"
    int cc_major = 0;              ///< compute capability, major
    int cc_minor = 0;              ///< compute capability, minor
    int sms = 0;                   ///< streaming multiprocessors
    std::size_t global_bytes = 0;  ///< device memory in bytes
    int l2_bytes = 0;              ///< L2 cache in bytes
    double peak_gbs = 0;           ///< theoretical memory bandwidth from clock and bus width, GB/s (0 if unknown)

    /// \brief One line, e.g. "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.1 GiB, L2 50 MiB)".
    std::string describe() const;
};

/// \brief The current device's facts, read once per process.
/// \snippet grading/judge/device_query.cpp facts
const DeviceFacts& device_facts();

/// \brief A GPU architecture that code is built for.
struct Architecture {
    int major = 0;             ///< compute capability, major: 9 for sm_90
    int minor = 0;             ///< compute capability, minor: 0 for sm_90
    bool exact = false;        ///< only that one (sm_90a code runs on 9.0 alone), or it and newer
    const char* name = "";     ///< as the toolkit names it, e.g. "sm_90a"
    const char* needs = "";    ///< what needs it, e.g. "code with wgmma and TMA"
};

/// \brief TF32 on the tensor cores (mma.sync, cuBLAS in TF32): sm_80 and newer.
inline constexpr Architecture kTf32TensorCores{8, 0, false, "sm_80", "TF32 on the tensor cores"};

/// \brief Hopper's wgmma and TMA: code built for sm_90a, which runs on compute capability 9.0 alone.
inline constexpr Architecture kSm90a{9, 0, true, "sm_90a", "code with wgmma and TMA"};

/// \brief Why this GPU cannot run code built for `needed`, e.g. "code with wgmma and TMA needs sm_90a, and
/// this GPU is sm_86 (NVIDIA A40)"; empty when it can.
/// \param needed the architecture
std::string why_not_on_this_gpu(const Architecture& needed);

/// \brief Device-to-device cudaMemcpy bandwidth in GB/s, bytes read plus bytes written.
///
/// Measured once per process on buffers much larger than L2, unless WORKBOOK_COPY_GBS holds a
/// figure measured earlier in the same grade run.
/// \snippet tests/check_06_thread_sweep.cpp copy ceiling
double copy_ceiling_gbs();

/// \brief The device-to-device copy bandwidth measured in this process, never taken from the
/// environment: what the judge's physical limit rests on, since code in a student's file could
/// change the environment before main().
/// \return GB/s (bytes read plus bytes written, per second)
double measured_copy_gbs();

/// \brief cuBLAS SGEMM FP32 rate in GFLOP/s on square matrices of 4096 (smaller on small GPUs).
///
/// Measured once per process with TF32 off, unless WORKBOOK_SGEMM_GFLOPS holds a figure measured
/// earlier in the same grade run.
/// \snippet tests/matmul_cases.hpp versus sgemm
double sgemm_ceiling_gflops();

/// \brief cuBLAS SGEMM FP32 (TF32 off) on random m x k and k x n matrices, in GFLOP/s.
/// \param m rows of A and C
/// \param k columns of A, rows of B
/// \param n columns of B and C
/// \snippet tests/matmul_cases.hpp cublas
double sgemm_gflops(int m, int k, int n);

/// \brief cuBLAS SGEMM with TF32 tensor cores (CUBLAS_TF32_TENSOR_OP_MATH: inputs rounded to
/// TF32, sums in FP32) on random m x k and k x n matrices, in GFLOP/s.
/// \param m rows of A and C
/// \param k columns of A, rows of B
/// \param n columns of B and C
/// \snippet tests/matmul_cases.hpp cublas
double tf32_gemm_gflops(int m, int k, int n);

/// \brief cuBLAS TF32 rate in GFLOP/s on square matrices of 4096 (smaller on small GPUs): the
/// ceiling of lab 05's tensor-core steps. Measured once per process, unless
/// WORKBOOK_TF32_GFLOPS holds a figure measured earlier in the same grade run.
/// \snippet tests/matmul_cases.hpp versus sgemm
double tf32_ceiling_gflops();

/// \brief The GPU's FP32 peak in GFLOP/s: SMs x peak clock x FP32 lanes per SM x 2 (a fused
/// multiply-add counts as two operations). No FP32 kernel can go faster; the judge refuses a
/// matmul figure above it.
///
/// FP32 lanes per SM come from the compute capability: 64 up to sm_80, 128 from sm_86 on.
double fp32_peak_gflops();

/// \brief The GPU's dense TF32 tensor-core peak in GFLOP/s: SMs x peak clock x TF32 operations per
/// clock per SM (from the compute capability, the largest of its generation's data sheets; 0
/// before sm_80, which has no TF32). No TF32 kernel can go faster; the judge refuses a figure
/// above it.
double tf32_peak_gflops();

/// \brief "2710 GB/s = 91% of copy (2990 GB/s)": a bandwidth beside the copy ceiling.
/// \param gbs the bandwidth to report
/// \snippet common/judge_speed.cu versus
std::string versus_copy(double gbs);

/// \brief "9000 GFLOP/s = 18% of cuBLAS SGEMM (51000 GFLOP/s)": a rate beside the SGEMM ceiling.
/// \param gflops the rate to report
/// \snippet tests/matmul_cases.hpp versus sgemm
std::string versus_sgemm(double gflops);

/// \brief "250000 GFLOP/s = 66% of cuBLAS TF32 (380000 GFLOP/s)": a rate beside cuBLAS in TF32.
/// \param gflops the rate to report
std::string versus_tf32(double gflops);

}  // namespace workbook
