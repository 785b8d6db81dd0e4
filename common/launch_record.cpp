// Recording kernels and copies with CUPTI's activity API.
//
// CUPTI is switched on at the first recording and stays on: it hands over records in buffers,
// which a flush returns through buffer_completed. A recording keeps only the records whose GPU
// start time falls between its own begin and end (CUPTI's timestamps share one clock with
// cuptiGetTimestamp), so work launched before the recording, even if reported late, never
// counts as the student's. Beginning a recording costs nothing on the GPU's side.
//
// A forced flush may hand over a record CUPTI has not stamped yet: CUPTI's documentation says a
// start and end of 0 mean "timestamp information could not be collected". Dropping those made a
// correct kernel fail, rarely, with "launched no kernel" (seen once in about 60 GPU test runs).
//
// Timing discipline: CUPTI asks for a fresh buffer in the middle of a kernel launch, inside a
// timed region. A buffer that malloc has just mapped costs its page faults there (about 0.15 ms
// for 4 MiB, measured on an H100: half the time of a vector add at 2^26). So buffers are kept in
// a pool and reused, already touched. And CUPTI's first launch after a forced flush waits while
// CUPTI readies a buffer again (0.1 to 0.5 ms on an H100): the grader's runner launches a kernel
// of its own after each flush, outside the judge's clock (launch_after_recording in
// grading/runner/main.cu).
#include "launch_record.hpp"

#include "check.hpp"

#include <cupti.h>
#include <unistd.h>
#include <cxxabi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace workbook {

namespace {

struct Seen {
    std::uint64_t start = 0, end = 0;
    bool kernel = false;
    std::string name;               // kernels
    std::size_t bytes_to_host = 0;  // copies, and managed memory migrated to the host
};

std::mutex g_mutex;
std::vector<Seen> g_seen;
std::vector<uint8_t*> g_free_buffers;
std::uint64_t g_begin = 0;
std::uint64_t g_last_end = 0;  // when the last recording ended: kernels between it and g_begin ran between calls
bool g_started = false;

constexpr std::size_t kBufferBytes = 1 << 20;

uint8_t* new_buffer()
{
    auto* buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
    if (buffer) std::memset(buffer, 0, kBufferBytes);  // touch every page now, not in a timed launch
    return buffer;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records)
{
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        if (!g_free_buffers.empty()) {
            *buffer = g_free_buffers.back();
            g_free_buffers.pop_back();
        } else {
            *buffer = nullptr;
        }
    }
    if (*buffer == nullptr) *buffer = new_buffer();
    *size = *buffer ? kBufferBytes : 0;
    *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            const auto* kernel = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
            g_seen.push_back({kernel->start, kernel->end, true, kernel->name ? kernel->name : "(unnamed kernel)", 0});
        } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            const auto* copy = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
            const bool to_host = copy->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
            g_seen.push_back({copy->start, copy->end, false, "", to_host ? static_cast<std::size_t>(copy->bytes) : 0});
        } else if (record->kind == CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER) {
            // Managed memory that the host touched after a kernel wrote it: the driver migrates it.
            const auto* migration = reinterpret_cast<const CUpti_ActivityUnifiedMemoryCounter3*>(record);
            if (migration->counterKind == CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH)
                g_seen.push_back({migration->start, migration->end, false, "", static_cast<std::size_t>(migration->value)});
        }
    }
    g_free_buffers.push_back(buffer);
}

void cupti(CUptiResult result, const char* call)
{
    if (result == CUPTI_SUCCESS) return;
    const char* text = nullptr;
    cuptiGetResultString(result, &text);
    throw std::runtime_error(std::string("CUPTI cannot record the kernels here: ") + call + " failed: " +
                             (text ? text : "unknown error") +
                             ". Is another profiler (ncu, nsys, compute-sanitizer) attached to the checker?");
}

void flush()
{
    CUDA_CHECK(cudaDeviceSynchronize());
    cupti(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
}

// Managed-memory migrations to the host, so that a round trip through cudaMallocManaged shows
// its result coming back. Best effort: where the driver cannot count them, copies still count.
void count_managed_migrations()
{
    CUpti_ActivityUnifiedMemoryCounterConfig config{};
    config.scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE;
    config.kind = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH;
    config.deviceId = 0;
    config.enable = 1;
    if (cuptiActivityConfigureUnifiedMemoryCounter(&config, 1) == CUPTI_SUCCESS)
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER);
}

// The recorder the judge uses: CUPTI in this process unless set_recorder installed another.
Recorder& current_recorder()
{
    static Recorder recorder{cupti_begin_recording, [] { return cupti_end_recording(); }};
    return recorder;
}

bool mentions(const std::string& text, const char* word)
{
    std::string lower(text);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    return lower.find(word) != std::string::npos;
}

}  // namespace

void begin_recording() { current_recorder().begin(); }

LaunchRecord end_recording() { return current_recorder().end(); }

void set_recorder(Recorder recorder) { current_recorder() = std::move(recorder); }

void cupti_begin_recording()
{
    if (!g_started) {
        cupti(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
        cupti(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable(kernels)");
        cupti(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), "cuptiActivityEnable(copies)");
        count_managed_migrations();
        std::lock_guard<std::mutex> lock(g_mutex);
        for (int i = 0; i < 8; ++i) g_free_buffers.push_back(new_buffer());
        g_started = true;
    }
    std::lock_guard<std::mutex> lock(g_mutex);
    g_seen.clear();
    cupti(cuptiGetTimestamp(&g_begin), "cuptiGetTimestamp");
}

LaunchRecord cupti_end_recording(const std::string& drained_marker)
{
    flush();
    std::uint64_t end = 0;
    cupti(cuptiGetTimestamp(&end), "cuptiGetTimestamp");
    std::lock_guard<std::mutex> lock(g_mutex);
    LaunchRecord record;
    std::uint64_t drained = 0;  // when the marker kernel started: the default stream had drained
    for (const Seen& seen : g_seen)
        if (seen.kernel && !drained_marker.empty() && seen.name == drained_marker) drained = std::max(drained, seen.start);
    for (const Seen& seen : g_seen) {
        if (seen.kernel && !drained_marker.empty() && seen.name == drained_marker) continue;
        // Started after the last recording ended and before this one began: launched between
        // calls, by a thread of the student's or on a stream nobody waited for. Only in the
        // grader's runner (which names its marker), where nothing else runs between calls.
        if (seen.kernel && !drained_marker.empty() && g_last_end != 0 && seen.start > g_last_end && seen.start < g_begin) {
            if (record.after_return.empty()) record.after_return_ms = static_cast<double>(seen.start - g_last_end) / 1e6;
            record.after_return.push_back(seen.name);
        }
        // A start of 0 means CUPTI could not stamp the record before the forced flush handed it
        // over. Work launched before the recording finished (and was read back) long before that
        // flush, so such a record is the recording's own last kernel or copy: it counts.
        const bool unstamped = seen.start == 0;
        if (!unstamped && (seen.start < g_begin || seen.start > end)) continue;
        if (seen.kernel) record.kernels.push_back(seen.name);
        // Ended after the call had returned and the default stream had drained: its stream is
        // one the default stream does not wait for.
        if (seen.kernel && drained != 0 && seen.end > drained) record.still_running.push_back(seen.name);
        record.device_to_host_bytes += seen.bytes_to_host;
    }
    g_seen.clear();
    g_last_end = end;
    return record;
}

std::string this_program()
{
    char path[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    return n > 0 ? std::string(path, static_cast<std::size_t>(n)) : std::string();
}

const std::set<std::string>& student_kernels()
{
    static const std::set<std::string> names = [] {
        const std::string path = this_program() + ".kernels";
        std::ifstream in(path);
        if (!in)
            throw std::runtime_error("the list of the kernels your file defines is missing (" + path +
                                     "): it is written when the checker is built; build it again");
        std::set<std::string> found;
        std::string line;
        while (std::getline(in, line))
            if (!line.empty()) found.insert(line);
        return found;
    }();
    return names;
}

std::string kernel_display_name(const std::string& mangled)
{
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> text(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status),
                                                std::free);
    std::string name = status == 0 && text ? text.get() : mangled;
    const std::size_t paren = name.find('(');
    if (paren != std::string::npos && paren > 0) name.resize(paren);
    return name.size() > 120 ? name.substr(0, 117) + "..." : name;
}

std::string kernel_origin(const std::string& mangled)
{
    if (mentions(mangled, "cudnn")) return "cuDNN";
    if (mentions(mangled, "cublas") || mentions(mangled, "gemm") || mentions(mangled, "xmma") ||
        mentions(mangled, "cutlass"))
        return "cuBLAS or CUTLASS";
    if (mentions(mangled, "thrust") || mentions(mangled, "3cub")) return "Thrust or CUB";
    if (mangled.rfind("_ZN8workbook", 0) == 0) return "the workbook's library";
    return "code outside your file";
}

}  // namespace workbook
