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
    CublasHandle()
    {
        if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS)
            throw std::runtime_error("cublasCreate failed: is the GPU out of memory?");
        cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH);  // plain FP32, no TF32 tensor cores
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

double sgemm_gflops(int m, int k, int n)
{
    const DeviceBuffer<float> a(random_floats(static_cast<std::size_t>(m) * k, seed_for("sgemm a")));
    const DeviceBuffer<float> b(random_floats(static_cast<std::size_t>(k) * n, seed_for("sgemm b")));
    DeviceBuffer<float> c(static_cast<std::size_t>(m) * n);
    CublasHandle cublas;
    const float alpha = 1.0f, beta = 0.0f;
    const Timing t = time_gpu([&] {
        // Column-major cuBLAS computes the row-major C = A·B as C^T = B^T·A^T.
        if (cublasSgemm(cublas.handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b.data(), n,
                        a.data(), k, &beta, c.data(), n) != CUBLAS_STATUS_SUCCESS)
            throw std::runtime_error("cublasSgemm failed");
    });
    return t.giga_per_second(2.0 * m * n * static_cast<double>(k));
}

double sgemm_ceiling_gflops()
{
    static const double gflops = [] {
        if (double known = from_environment("WORKBOOK_SGEMM_GFLOPS")) return known;
        int n = 4096;
        while (n > 512 && 3.0 * n * n * sizeof(float) > device_facts().global_bytes / 4) n /= 2;
        return sgemm_gflops(n, n, n);
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

}  // namespace workbook
