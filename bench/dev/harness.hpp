// What the development programs of bench/dev/ share around their versions of a matrix product:
// what a version is, the command line's list of versions and sizes, and the run of one version at
// one shape, checked and then timed beside cuBLAS (TF32 unless the program names another ceiling:
// an FP32 product is measured against SGEMM); and, on the device, the order their kernels take
// tiles in.
#pragma once

#include "common/buffers.hpp"
#include "common/check.hpp"
#include "common/compare.hpp"
#include "common/device.hpp"
#include "common/timing.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace dev {

// The tile of C that position `index` of the order names, in a grid of tiles_m x tiles_n tiles:
// groups of group_m tile rows, column after column within a group, so that the blocks running at
// once share rows of A and columns of B in the L2 (group_m 0: row after row).
__device__ inline void tile_at(int index, int tiles_m, int tiles_n, int group_m, int& tm, int& tn)
{
    if (group_m == 0) {
        tm = index / tiles_n;
        tn = index % tiles_n;
        return;
    }
    const int per_group = group_m * tiles_n;
    const int first = index / per_group * group_m;
    const int rows = min(tiles_m - first, group_m);
    const int in_group = index % per_group;
    tm = first + in_group % rows;
    tn = in_group / rows;
}

// A version's launcher: C = A B, all row-major floats, A m x k and B k x n.
using Launch = void (*)(const float*, const float*, float*, int, int, int);

struct Version {
    const char* name;
    Launch launch;
    const void* kernel;  // for its registers and spills (none: a version that picks its own)
    bool bound = false;  // a bound, not a product: timed without a check
};

// cuBLAS itself as a version (a Launch): SGEMM, or in TF32 on the tensor cores, for its own error
// beside the versions' and for DEV_SUSTAIN_S's window. Row-major C = A·B is column-major
// C^T = B^T A^T. One handle for each math mode, made at the first call. DEV_CUBLAS_SMS=N asks
// cuBLAS to use N SMs (cublasSetSmCountTarget): below its power limit, at its highest clock, the
// GPU's power meter then gives a product's energy. cuBLAS picks other kernels there.
template <bool TF32>
void cublas_product(const float* a, const float* b, float* c, int m, int k, int n)
{
    static cublasHandle_t handle = [] {
        cublasHandle_t h;
        if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS ||
            cublasSetMathMode(h, TF32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH) != CUBLAS_STATUS_SUCCESS)
            throw std::runtime_error("bench/dev: cuBLAS could not be set up");
        const char* sms = std::getenv("DEV_CUBLAS_SMS");
        if (sms && cublasSetSmCountTarget(h, std::atoi(sms)) != CUBLAS_STATUS_SUCCESS)
            throw std::runtime_error("bench/dev: cuBLAS would not take DEV_CUBLAS_SMS");
        return h;
    }();
    const float one = 1.0f, zero = 0.0f;
    if (cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, n, a, k, &zero, c, n) != CUBLAS_STATUS_SUCCESS)
        throw std::runtime_error("bench/dev: cublasSgemm failed");
}

// "1024,2048,4096" -> {1024, 2048, 4096}.
inline std::vector<int> parse_list(const char* text)
{
    std::vector<int> values;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');) values.push_back(std::atoi(item.c_str()));
    return values;
}

// Reads the command line, [VERSION ...] [--sizes 1024,2048,4096], into the versions chosen (all of
// them when none is named) and the sizes; prints the usage and the versions' names and returns
// false on anything else.
template <typename Versions>
bool parse_arguments(int argc, char** argv, const Versions& versions, std::vector<int>& chosen, std::vector<int>& sizes)
{
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            sizes = parse_list(argv[++i]);
        } else if (argv[i][0] >= '0' && argv[i][0] <= '9' && std::atoi(argv[i]) < static_cast<int>(versions.size())) {
            chosen.push_back(std::atoi(argv[i]));
        } else {
            std::fprintf(stderr, "usage: %s [VERSION ...] [--sizes 1024,2048,4096]\nversions:\n", argv[0]);
            for (std::size_t v = 0; v < versions.size(); ++v) std::fprintf(stderr, "  %zu  %s\n", v, versions[v].name);
            return false;
        }
    }
    if (chosen.empty())
        for (std::size_t v = 0; v < versions.size(); ++v) chosen.push_back(static_cast<int>(v));
    return true;
}

// A kernel's registers a thread, and its spills if any; "-" for none (a version that picks its
// kernel at run time).
inline std::string registers_of(const void* kernel)
{
    if (kernel == nullptr) return "-";
    cudaFuncAttributes attributes{};
    CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
    std::string text = std::to_string(attributes.numRegs);
    if (attributes.localSizeBytes > 0) text += " (" + std::to_string(attributes.localSizeBytes) + " B spilled)";
    return text;
}

// The table's heading for the versions of one shape, names `width` characters wide.
inline void print_heading(int width)
{
    std::printf("  %-3s %-*s %10s %10s %7s %10s  %-10s %s\n", "v", width, "version", "ms", "GFLOP/s", "cuBLAS",
                "max error", "registers", "cuBLAS just before");
}

// The wall clock, as nvidia-smi's timestamps write it (2026/11/27 19:55:01.123).
inline std::string wall_clock()
{
    const auto now = std::chrono::system_clock::now();
    const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
    const long long ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
    char text[40];
    std::strftime(text, sizeof text, "%Y/%m/%d %H:%M:%S", std::localtime(&seconds));
    return std::string(text) + "." + std::to_string(1000 + ms).substr(1);
}

// DEV_SUSTAIN_S=S: the version run back to back for S seconds, its window printed on the wall
// clock. Beside nvidia-smi's log (clocks.sm, power.draw) it says at which clock the version runs
// once the GPU has reached its power limit, which a timing loop of a few hundred milliseconds may
// not have. (cuBLAS is one of the versions, for its own window.)
inline void sustain(double seconds, const char* name, const std::function<void()>& launch)
{
    using clock = std::chrono::steady_clock;
    const std::string from = wall_clock();
    int runs = 0;
    for (const auto end = clock::now() + std::chrono::duration<double>(seconds); clock::now() < end; ++runs) {
        launch();
        if (runs % 16 == 15) CUDA_CHECK(cudaDeviceSynchronize());
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    std::printf("  [sustained: %s from %s to %s, %d runs]\n", name, from.c_str(), wall_clock().c_str(), runs);
}

// DEV_SHORT_S=S: the version timed as the bench times it (time_gpu: an L2 flush before each run,
// 15 runs, the median), again and again for S seconds, its window printed on the wall clock. Beside
// nvidia-smi's log it says at which clock the version runs in that regime, where the GPU spends
// part of each run's time flushing and waiting, and the median of the medians is a steadier
// figure than one timing.
inline void short_timed(double seconds, const char* name, const std::function<void()>& launch)
{
    using clock = std::chrono::steady_clock;
    const std::string from = wall_clock();
    std::vector<double> medians;  // at least one timing, whatever S is: the line below reads them
    const auto end = clock::now() + std::chrono::duration<double>(seconds);
    do {
        medians.push_back(workbook::time_gpu(launch).ms.median);
    } while (clock::now() < end);
    std::sort(medians.begin(), medians.end());
    // The host's time to launch, for a gap between the start event and the kernel: under the L2
    // flush's time before it (about 35 us on an H100), the GPU never waits for the launch.
    const auto launched = clock::now();
    for (int i = 0; i < 20; ++i) launch();
    const double host_us = std::chrono::duration<double, std::micro>(clock::now() - launched).count() / 20;
    CUDA_CHECK(cudaDeviceSynchronize());
    std::printf("  [short-timed: %s from %s to %s, %zu timings, median %.4f ms, lowest %.4f, host %.1f us a launch]\n",
                name, from.c_str(), wall_clock().c_str(), medians.size(), medians[medians.size() / 2], medians.front(),
                host_us);
}

// DEV_COOL_S=S: the version and cuBLAS TF32 timed as published H100 kernels are (P. Shankhdhar's
// fast.cu: S seconds idle first, "to avoid thermal throttling", then 8 runs back to back between
// two events, no L2 flush), cuBLAS then the version, three rounds. From rest the GPU starts at its
// highest clock and a few milliseconds of work do not bring it to its power limit: the regime in
// which work a clock cycle counts, where the bench's timing (after warm-ups) measures at the limit.
inline void cool_start(double seconds, const char* name, const std::function<void()>& launch,
                       const std::function<void()>& cublas)
{
    auto burst = [&](const std::function<void()>& f) {
        std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
        workbook::TimingOptions once;
        once.warmup = 0;
        once.repetitions = 1;
        once.flush_l2 = false;
        return workbook::time_gpu([&] { for (int i = 0; i < 8; ++i) f(); }, once).ms.median / 8;
    };
    for (int round = 0; round < 3; ++round) {
        const double theirs = burst(cublas), ours = burst(launch);
        std::printf("  [cool-start: %s, round %d: cuBLAS %.4f ms, this %.4f ms, %.1f%%]\n", name, round + 1, theirs,
                    ours, 100.0 * theirs / ours);
    }
}

// Version v at m x k x n: one run into a poisoned C (NaN: an element never written fails) checked
// against the reference, then, if right or a bound, timed beside cuBLAS timed again just before it
// (a GPU that has warmed up clocks lower, and each ratio is taken at the same temperature as its
// version). A wrong version is reported and never timed. The ceiling is the cuBLAS product a
// version competes with: TF32 for the tensor-core steps, SGEMM for an FP32 one (beside TF32,
// several times faster on the same GPU, an FP32 kernel's ratio would say nothing about its code).
inline void check_and_time(int v, const Version& version, int width, const float* a, const float* b,
                           workbook::DeviceBuffer<float>& c, int m, int k, int n, const workbook::Reference& expected,
                           const workbook::Tolerance& tolerance,
                           double (*ceiling)(int, int, int) = workbook::tf32_gemm_gflops)
{
    using namespace workbook;
    CUDA_CHECK(cudaMemset(c.data(), 0xFF, c.bytes()));
    version.launch(a, b, c.data(), m, k, n);
    CUDA_CHECK(cudaDeviceSynchronize());
    const Comparison comparison = compare_on_device("c", c.data(), expected, Shape::grid(m, n), tolerance);
    if (!comparison.ok() && !version.bound) {
        std::printf("  %-3d %-*s WRONG, not timed:\n%s\n", v, width, version.name, comparison.report().c_str());
        return;
    }
    if (const char* seconds = std::getenv("DEV_SUSTAIN_S"))
        sustain(std::atof(seconds), version.name, [&] { version.launch(a, b, c.data(), m, k, n); });
    if (const char* seconds = std::getenv("DEV_SHORT_S"))
        short_timed(std::atof(seconds), version.name, [&] { version.launch(a, b, c.data(), m, k, n); });
    if (const char* seconds = std::getenv("DEV_COOL_S"))
        cool_start(std::atof(seconds), version.name, [&] { version.launch(a, b, c.data(), m, k, n); },
                   [&] { cublas_product<true>(a, b, c.data(), m, k, n); });
    const double cublas_now = ceiling(m, k, n);
    const Timing timing = time_gpu([&] { version.launch(a, b, c.data(), m, k, n); });
    const double gflops = timing.giga_per_second(2.0 * m * k * n);
    std::printf("  %-3d %-*s %10.3f %10.0f %6.1f%% %10.3g  %-10s %.0f\n", v, width, version.name, timing.ms.median,
                gflops, 100.0 * gflops / cublas_now, comparison.max_error, registers_of(version.kernel).c_str(),
                cublas_now);
    std::fflush(stdout);
}

}  // namespace dev
