// Another process on the GPU: allocates and frees hundreds of MiB of device memory in a loop,
// so that the GPU's free memory keeps moving while a checker runs beside it
// (test_leak_beside_others.py). Prints "ready" once its first allocation is made, and on
// SIGTERM, or after --seconds (default 300), "cycles N" and exits.
//
// Usage: device_churn [--seconds S]
#include <cuda_runtime.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

volatile sig_atomic_t g_stop = 0;

void on_signal(int) { g_stop = 1; }

bool ok(cudaError_t status, const char* what)
{
    if (status == cudaSuccess) return true;
    std::fprintf(stderr, "device_churn: %s: %s\n", what, cudaGetErrorString(status));
    return false;
}

}  // namespace

int main(int argc, char** argv)
{
    double seconds = 300;
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::atof(argv[i + 1]);
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);

    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::printf("no GPU\n");
        return 77;
    }
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    unsigned long cycles = 0;
    unsigned int random = 12345;
    while (!g_stop && std::chrono::steady_clock::now() < end) {
        random = random * 1103515245u + 12345u;
        const std::size_t mib = 128 + 64 * ((random >> 16) % 9);  // 128 to 640 MiB
        void* block = nullptr;
        if (!ok(cudaMalloc(&block, mib << 20), "cudaMalloc")) return 1;
        if (!ok(cudaMemset(block, static_cast<int>(cycles & 0xff), mib << 20), "cudaMemset") ||
            !ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize"))
            return 1;
        if (cycles == 0) {
            std::printf("ready\n");
            std::fflush(stdout);
        }
        usleep(1000 * ((random >> 8) % 20));  // held 0 to 19 ms
        if (!ok(cudaFree(block), "cudaFree")) return 1;
        ++cycles;
        usleep(1000 * ((random >> 4) % 10));  // then none for 0 to 9 ms
    }
    std::printf("cycles %lu\n", cycles);
    return 0;
}
