// What the runner keeps of the student's process between calls: the device state a call may set
// and the page-locked host memory it holds (runner.hpp).
//
// Device state. A call may set the persisting-L2 carve-out and an access-policy window, the
// cache preference or the L2 persisting lines; set inside a call they are that call's own work.
// Left in place they would reach the next timed run: lines made persisting survive the judge's
// L2 flush between batches, so the next batch's inputs could be served from L2, and the carve-out
// is the whole device's, so the reference's runs would have less L2 while the student's runner
// is paused. So the runner puts them back before and after every call (reset_device_state).
//
// Page-locked host memory. A kernel reads and writes such memory in place (on every 64-bit
// system with unified addressing), so a device function's work could be done by the CPU there
// with no copy to the host. Lab 01's host round trip may stage through it, so its file may call
// cudaHostAlloc and its kin (grading/buildtools/student_symbols.py); the runner is linked with
// -Wl,--wrap for each of them, so every allocation and release of the student's code passes
// through here, and each call's record says how much was held while it ran (pinned_bytes).
#include "runner.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <mutex>

namespace workbook::runner {

namespace {
std::mutex g_mutex;
std::map<const void*, std::size_t> g_pinned;  // the student's page-locked blocks, by start
std::size_t g_live = 0;                      // their bytes now
std::size_t g_most = 0;                      // the most held since reset_pinned_watch

void noted(const void* block, std::size_t bytes)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    auto& size = g_pinned[block];
    g_live += bytes - size;
    size = bytes;
    g_most = std::max(g_most, g_live);
}

void released(const void* block)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    const auto found = g_pinned.find(block);
    if (found == g_pinned.end()) return;
    g_live -= found->second;
    g_pinned.erase(found);
}
}  // namespace

void reset_pinned_watch()
{
    std::lock_guard<std::mutex> lock(g_mutex);
    g_most = g_live;
}

std::size_t most_pinned_bytes()
{
    std::lock_guard<std::mutex> lock(g_mutex);
    return g_most;
}

void reset_device_state()
{
    // Each call asks first and changes only what differs: a call that set nothing pays a few
    // queries, and a limit set again costs the context a synchronization.
    std::size_t carve_out = 0;
    if (cudaDeviceGetLimit(&carve_out, cudaLimitPersistingL2CacheSize) == cudaSuccess && carve_out != 0)
        cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
    cudaCtxResetPersistingL2Cache();  // lines made persisting become normal, evictable by the flush
    cudaStreamAttrValue window{};
    if (cudaStreamGetAttribute(cudaStreamLegacy, cudaStreamAttributeAccessPolicyWindow, &window) == cudaSuccess &&
        window.accessPolicyWindow.num_bytes != 0) {
        cudaStreamAttrValue none{};
        cudaStreamSetAttribute(cudaStreamLegacy, cudaStreamAttributeAccessPolicyWindow, &none);
    }
    cudaFuncCache preference = cudaFuncCachePreferNone;
    if (cudaDeviceGetCacheConfig(&preference) == cudaSuccess && preference != cudaFuncCachePreferNone)
        cudaDeviceSetCacheConfig(cudaFuncCachePreferNone);
    cudaGetLastError();  // nothing of this reaches the student's next call
}

}  // namespace workbook::runner

// The wrappers (-Wl,--wrap=NAME makes the student's calls of NAME call __wrap_NAME, and
// __real_NAME the runtime's own).
extern "C" {
cudaError_t __real_cudaHostAlloc(void** block, std::size_t bytes, unsigned int flags);
cudaError_t __real_cudaMallocHost(void** block, std::size_t bytes);
cudaError_t __real_cudaHostRegister(void* block, std::size_t bytes, unsigned int flags);
cudaError_t __real_cudaFreeHost(void* block);
cudaError_t __real_cudaHostUnregister(void* block);

cudaError_t __wrap_cudaHostAlloc(void** block, std::size_t bytes, unsigned int flags)
{
    const cudaError_t status = __real_cudaHostAlloc(block, bytes, flags);
    if (status == cudaSuccess && block && *block) workbook::runner::noted(*block, bytes);
    return status;
}

cudaError_t __wrap_cudaMallocHost(void** block, std::size_t bytes)
{
    const cudaError_t status = __real_cudaMallocHost(block, bytes);
    if (status == cudaSuccess && block && *block) workbook::runner::noted(*block, bytes);
    return status;
}

cudaError_t __wrap_cudaHostRegister(void* block, std::size_t bytes, unsigned int flags)
{
    const cudaError_t status = __real_cudaHostRegister(block, bytes, flags);
    if (status == cudaSuccess) workbook::runner::noted(block, bytes);
    return status;
}

cudaError_t __wrap_cudaFreeHost(void* block)
{
    workbook::runner::released(block);
    return __real_cudaFreeHost(block);
}

cudaError_t __wrap_cudaHostUnregister(void* block)
{
    workbook::runner::released(block);
    return __real_cudaHostUnregister(block);
}
}
