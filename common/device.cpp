#include "device.hpp"

#include "buffers.hpp"
#include "check.hpp"
#include "random.hpp"
#include "timing.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace workbook {

namespace {
std::string cuda_version(int v)
{
    return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

double from_environment(const char* name)
{
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') return 0;
    const double value = std::atof(text);
    return value > 0 ? value : 0;
}

std::string percent_of(double value, double ceiling)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.0f%%", 100.0 * value / ceiling);
    return text;
}

std::string rounded(double v)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.0f", v);
    return text;
}

struct CublasHandle {
    cublasHandle_t handle = nullptr;
    // CUBLAS_DEFAULT_MATH: plain FP32 on the CUDA cores; CUBLAS_TF32_TENSOR_OP_MATH: inputs
    // rounded to TF32 on the tensor cores, sums in FP32.
    explicit CublasHandle(cublasMath_t math)
    {
        if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS)
            throw std::runtime_error("cublasCreate failed: is the GPU out of memory?");
        cublasSetMathMode(handle, math);
    }
    ~CublasHandle() { cublasDestroy(handle); }
    CublasHandle(const CublasHandle&) = delete;
    CublasHandle& operator=(const CublasHandle&) = delete;
};
}  // namespace

DeviceProbe probe_device()
{
    DeviceProbe probe;
    cudaDriverGetVersion(&probe.driver_version);
    cudaRuntimeGetVersion(&probe.runtime_version);
    int count = 0;
    const cudaError_t error = cudaGetDeviceCount(&count);
    cudaGetLastError();  // the probe must leave no error behind
    if (error == cudaSuccess && count > 0) {
        probe.status = DeviceProbe::Status::ok;
        return probe;
    }
    if (probe.driver_version == 0 || error == cudaErrorNoDevice || (error == cudaSuccess && count == 0)) {
        probe.status = DeviceProbe::Status::no_device;
        probe.message = "no CUDA device found: this machine has no NVIDIA GPU, or no NVIDIA driver "
                        "is loaded";
    } else if (error == cudaErrorInsufficientDriver || probe.driver_version < probe.runtime_version) {
        probe.status = DeviceProbe::Status::driver_too_old;
        probe.message = "the NVIDIA driver is too old for this CUDA runtime: the driver supports CUDA " +
                        cuda_version(probe.driver_version) + ", this build needs CUDA " +
                        cuda_version(probe.runtime_version) + "; update the driver";
    } else {
        probe.status = DeviceProbe::Status::error;
        probe.message = std::string("the CUDA device cannot be used: ") + cudaGetErrorString(error) +
                        " (" + cudaGetErrorName(error) + ")";
    }
    return probe;
}

std::string DeviceFacts::describe() const
{
    char text[256];
    std::snprintf(text, sizeof text, "%s (sm_%d%d, %d SMs, %.1f GiB, L2 %d MiB)", name.c_str(),
                  cc_major, cc_minor, sms, global_bytes / 1073741824.0, l2_bytes >> 20);
    return text;
}

const DeviceFacts& device_facts()
{
    static const DeviceFacts facts = [] {
        DeviceFacts f;
        CUDA_CHECK(cudaGetDevice(&f.index));
        cudaDeviceProp prop{};
        CUDA_CHECK(cudaGetDeviceProperties(&prop, f.index));
        f.name = prop.name;
        f.cc_major = prop.major;
        f.cc_minor = prop.minor;
        f.sms = prop.multiProcessorCount;
        f.global_bytes = prop.totalGlobalMem;
        f.l2_bytes = prop.l2CacheSize;
        int memory_khz = 0;
        if (cudaDeviceGetAttribute(&memory_khz, cudaDevAttrMemoryClockRate, f.index) == cudaSuccess)
            f.peak_gbs = 2.0 * memory_khz * 1e3 * (prop.memoryBusWidth / 8.0) / 1e9;  // double data rate
        cudaGetLastError();
        return f;
    }();
    return facts;
}

std::string why_not_on_this_gpu(const Architecture& needed)
{
    const DeviceFacts& gpu = device_facts();
    const int have = 10 * gpu.cc_major + gpu.cc_minor, want = 10 * needed.major + needed.minor;
    if (needed.exact ? have == want : have >= want) return "";
    return std::string(needed.needs) + " needs " + needed.name + (needed.exact ? "" : " or newer") +
           ", and this GPU is sm_" + std::to_string(have) + " (" + gpu.name + ")";
}

double copy_ceiling_gbs()
{
    static const double gbs = [] {
        if (double known = from_environment("WORKBOOK_COPY_GBS")) return known;
        return measured_copy_gbs();
    }();
    return gbs;
}

double measured_copy_gbs()
{
    static const double gbs = [] {
        const std::size_t bytes = std::min<std::size_t>(256u << 20, device_facts().global_bytes / 8);
        DeviceBuffer<unsigned char> source(bytes), target(bytes);
        source.fill_bytes(0x5A);
        const Timing t = time_gpu([&] {
            CUDA_CHECK(cudaMemcpyAsync(target.data(), source.data(), bytes, cudaMemcpyDeviceToDevice));
        });
        return t.giga_per_second(2.0 * bytes);  // each byte is read once and written once
    }();
    return gbs;
}

namespace {
// cublasSgemm on random m x k and k x n matrices in the given math mode, in GFLOP/s.
double cublas_sgemm_gflops(int m, int k, int n, cublasMath_t math)
{
    const DeviceBuffer<float> a(random_floats(static_cast<std::size_t>(m) * k, seed_for("sgemm a")));
    const DeviceBuffer<float> b(random_floats(static_cast<std::size_t>(k) * n, seed_for("sgemm b")));
    DeviceBuffer<float> c(static_cast<std::size_t>(m) * n);
    CublasHandle cublas(math);
    const float alpha = 1.0f, beta = 0.0f;
    const Timing t = time_gpu([&] {
        // Column-major cuBLAS computes the row-major C = A·B as C^T = B^T·A^T.
        if (cublasSgemm(cublas.handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b.data(), n,
                        a.data(), k, &beta, c.data(), n) != CUBLAS_STATUS_SUCCESS)
            throw std::runtime_error("cublasSgemm failed");
    });
    return t.giga_per_second(2.0 * m * n * static_cast<double>(k));
}

// The largest square size up to 4096 whose three matrices fit in a quarter of the GPU's memory.
int ceiling_size()
{
    int n = 4096;
    while (n > 512 && 3.0 * n * n * sizeof(float) > device_facts().global_bytes / 4) n /= 2;
    return n;
}
}  // namespace

double sgemm_gflops(int m, int k, int n) { return cublas_sgemm_gflops(m, k, n, CUBLAS_DEFAULT_MATH); }

double tf32_gemm_gflops(int m, int k, int n) { return cublas_sgemm_gflops(m, k, n, CUBLAS_TF32_TENSOR_OP_MATH); }

double sgemm_ceiling_gflops()
{
    static const double gflops = [] {
        if (double known = from_environment("WORKBOOK_SGEMM_GFLOPS")) return known;
        const int n = ceiling_size();
        return sgemm_gflops(n, n, n);
    }();
    return gflops;
}

double tf32_ceiling_gflops()
{
    static const double gflops = [] {
        if (double known = from_environment("WORKBOOK_TF32_GFLOPS")) return known;
        const int n = ceiling_size();
        return tf32_gemm_gflops(n, n, n);
    }();
    return gflops;
}

double fp32_peak_gflops()
{
    const DeviceFacts& facts = device_facts();
    int clock_khz = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, facts.index));
    const int cc = 10 * facts.cc_major + facts.cc_minor;
    const int lanes = cc <= 80 ? 64 : 128;  // FP32 units per SM: Volta, Turing, A100: 64; later: 128
    return 2.0 * facts.sms * lanes * (clock_khz * 1e3) / 1e9;
}

double tf32_peak_gflops()
{
    const DeviceFacts& facts = device_facts();
    int clock_khz = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, facts.index));
    // Dense TF32 operations per clock per SM, from NVIDIA's data sheets (peak TFLOPS over SMs x
    // boost clock), the largest of each generation: Turing has no TF32; A100 1024; the other
    // Ampere and Ada GPUs 512; H100 2048; Blackwell and anything newer at most 4096.
    const int cc = 10 * facts.cc_major + facts.cc_minor;
    const int per_clock = cc < 80 ? 0 : cc == 80 ? 1024 : cc < 90 ? 512 : cc == 90 ? 2048 : 4096;
    return static_cast<double>(facts.sms) * per_clock * (clock_khz * 1e3) / 1e9;
}

std::string versus_copy(double gbs)
{
    const double ceiling = copy_ceiling_gbs();
    return rounded(gbs) + " GB/s = " + percent_of(gbs, ceiling) + " of copy (" + rounded(ceiling) +
           " GB/s)";
}

std::string versus_sgemm(double gflops)
{
    const double ceiling = sgemm_ceiling_gflops();
    return rounded(gflops) + " GFLOP/s = " + percent_of(gflops, ceiling) + " of cuBLAS SGEMM (" +
           rounded(ceiling) + " GFLOP/s)";
}

std::string versus_tf32(double gflops)
{
    const double ceiling = tf32_ceiling_gflops();
    return rounded(gflops) + " GFLOP/s = " + percent_of(gflops, ceiling) + " of cuBLAS TF32 (" +
           rounded(ceiling) + " GFLOP/s)";
}

}  // namespace workbook
