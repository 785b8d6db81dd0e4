// The judge's side of the two processes (remote.hpp): which runner a call goes to (the
// student's or the reference's), the judge's clock over the calls, and how a call's arguments
// travel. runner_process.cpp starts a runner in its sandbox, sends it calls, reads what came
// back, and notices when it dies.
#include "remote.hpp"

#include "common/buffers.hpp"
#include "common/check.hpp"
#include "common/judge.hpp"
#include "common/launch_record.hpp"
#include "common/stats.hpp"
#include "common/timing.hpp"

#include <cuda.h>
#include <cuda_runtime.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace workbook::remote {

namespace {

bool g_profile_next = false;
CallTime g_timed;                    // calls since the clock was last read, and their times
Runner* g_target = nullptr;          // as_reference's runner, or null for the student's
// set_reference_program's path; a function's static, as forwarders set it from static initializers
std::string& reference_program()
{
    static std::string program;
    return program;
}

std::map<const void*, const char*>& forwarders()
{
    static std::map<const void*, const char*> table;
    return table;
}

// The words of WORKBOOK_RUNNER_TOOL (one per line): a tool the student's runner runs under, in
// its sandbox, for a checker started by run_self_under (tools.hpp).
std::vector<std::string> runner_tool()
{
    std::vector<std::string> words;
    const char* tool = std::getenv("WORKBOOK_RUNNER_TOOL");
    if (tool == nullptr) return words;
    std::istringstream lines(tool);
    std::string word;
    while (std::getline(lines, word))
        if (!word.empty()) words.push_back(word);
    return words;
}

}  // namespace

Runner& student_runner()
{
    static Runner runner(this_program() + "_runner", "your code", runner_tool());
    return runner;
}

bool set_reference_program(const char* program)
{
    reference_program() = program;
    return true;
}

Runner& reference_runner()
{
    static Runner runner(reference_program(), "the reference solution");
    return runner;
}

void start_runners_early(bool reference)
{
    student_runner().start_early();
    // Started once the student's runner is up: CUDA starts one process at a time, and the
    // first test needs the student's runner, the first timed one the reference's.
    if (reference && !reference_program().empty()) student_runner().when_ready([] { reference_runner().start_early(); });
}

void end_runners()
{
    student_runner().end();
    if (!reference_program().empty()) reference_runner().end();
}

Runner& target_runner() { return g_target ? *g_target : student_runner(); }

void as_reference(const std::function<void()>& calls)
{
    if (reference_program().empty()) throw std::runtime_error("checker bug: no reference runner was built");
    struct Route {
        Route() { g_target = &reference_runner(); }
        ~Route() { g_target = nullptr; }
    } route;
    calls();
}

wire::Message call_request(const char* name)
{
    wire::Message request(wire::Op::call);
    request.put_string(name);
    request.put(static_cast<unsigned char>(g_profile_next));
    g_profile_next = false;
    return request;
}

void profile_next_call() { g_profile_next = true; }

void charge(double judged, double reported)
{
    ++g_timed.calls;
    g_timed.judged += judged;
    g_timed.reported += reported;
}

double round_trip_ms()
{
    static const double measured = [] {
        // Pinged on the reference solution's runner: the same dispatcher, and no student code
        // that could slow the pings down to have its own calls credited with less.
        if (reference_program().empty()) throw std::runtime_error("checker bug: no reference runner was built");
        Runner& trusted = reference_runner();
        DeviceBuffer<unsigned char> touch(1 << 20);
        std::vector<double> ms;
        constexpr int kWarmup = 5, kTimed = 41;
        for (int i = 0; i < kWarmup + kTimed; ++i) {
            // As before a timed call: the judge's own GPU work (an L2 flush, say) just done.
            CUDA_CHECK(cudaMemsetAsync(touch.data(), i, touch.bytes()));
            trusted.call(wire::Message(wire::Op::ping), "a ping");
            if (i >= kWarmup) ms.push_back(trusted.last_call_ms());
            trusted.take_record();
        }
        const Summary trip = summarize(ms);
        std::printf("round trip to a runner: %.4f ms (median of %zu, spread %.1f%%): taken off each timed call of "
                    "your code\n", trip.median, trip.count, 100.0 * trip.spread());
        std::fflush(stdout);
        return trip.median;
    }();
    return measured;
}

void record_from_runner()
{
    set_recorder({[] { student_runner().take_record(); },
                  [] { return student_runner().take_record(); }});
    // A timed run of the student's code is the judge's clock over its calls, less an empty
    // round trip for each (timing.hpp).
    set_call_clock([] {
        CallTime timed = g_timed;
        g_timed = CallTime{};
        if (timed.calls > 0) timed.judged = std::max(timed.judged - timed.calls * round_trip_ms(), 0.0);
        return timed;
    });
    // The reference is timed in its own runner, the same way as the student's code.
    set_reference_route(as_reference);
    // And alone: the student's runner is stopped first, with whatever its code left running (a
    // thread that launches kernels between calls would otherwise slow the reference, and so
    // flatter the student's ratio), then started again at once, its CUDA start overlapping what
    // follows. A runner under a tool is left alone: no probe times anything.
    const bool under_tool = !runner_tool().empty();
    set_reference_timed_alone(
        [under_tool] {
            if (under_tool) return;
            static bool told = false;
            if (!std::exchange(told, true)) {
                std::printf("the process that runs your code is stopped while the reference solution is "
                            "timed, and started again afterwards\n");
                std::fflush(stdout);
            }
            student_runner().stop_and_wait();
        },
        [under_tool] {
            if (!under_tool) student_runner().start_early();
        });
}

bool register_forwarder(const void* address, const char* name)
{
    forwarders()[address] = name;
    return true;
}

const char* forwarder_name(const void* address)
{
    const auto found = forwarders().find(address);
    return found == forwarders().end() ? nullptr : found->second;
}

HostCopies::~HostCopies()
{
    for (const SharedCopy& copy : copies_) {
        munmap(copy.shared, copy.bytes);
        ::close(copy.fd);
    }
}

void HostCopies::add(wire::Message& request, const void* data, bool writable)
{
    // A host array is the start of a heap block (a std::vector's storage): its usable size
    // covers the array.
    const std::size_t bytes = malloc_usable_size(const_cast<void*>(data));
    const int fd = memfd_create("workbook-host-array", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0)
        throw std::runtime_error(std::string("cannot share a host array with the runner: ") + std::strerror(errno));
    void* shared = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (shared == MAP_FAILED) {
        ::close(fd);
        throw std::runtime_error(std::string("cannot map a host array for the runner: ") + std::strerror(errno));
    }
    std::memcpy(shared, data, bytes);
    copies_.push_back({const_cast<void*>(data), shared, bytes, fd, writable});
    request.put(wire::Kind::host);
    request.put(request.attach(fd));
    request.put(static_cast<std::uint64_t>(bytes));
}

void HostCopies::copy_back()
{
    for (const SharedCopy& copy : copies_)
        if (copy.writable) std::memcpy(copy.original, copy.shared, copy.bytes);
}

namespace {

// Encodes a device array of the judge's as its allocation's IPC handle and the offset into it:
// the runner maps the allocation, and the student's kernels write the judge's buffer directly.
void put_device_pointer(wire::Message& request, const void* pointer)
{
    // The driver API's cuMemGetAddressRange and cuPointerGetAttribute, found through the runtime:
    // linking libcuda would stop the checker from starting at all on a machine without a driver.
    using AddressRange = CUresult (*)(CUdeviceptr*, std::size_t*, CUdeviceptr);
    using PointerAttribute = CUresult (*)(void*, CUpointer_attribute, CUdeviceptr);
    static const auto driver = [](const char* name) {
        void* function = nullptr;
        cudaDriverEntryPointQueryResult found{};
        CUDA_CHECK(cudaGetDriverEntryPointByVersion(name, &function, 12000, cudaEnableDefault, &found));
        if (function == nullptr) throw std::runtime_error(std::string("the CUDA driver lacks ") + name);
        return function;
    };
    static const auto address_range = reinterpret_cast<AddressRange>(driver("cuMemGetAddressRange"));
    static const auto attribute = reinterpret_cast<PointerAttribute>(driver("cuPointerGetAttribute"));
    CUdeviceptr base = 0;
    std::size_t size = 0;
    unsigned long long id = 0;  // unique to the allocation for the life of this process
    const auto device_pointer = reinterpret_cast<CUdeviceptr>(pointer);
    if (address_range(&base, &size, device_pointer) != CUDA_SUCCESS ||
        attribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, device_pointer) != CUDA_SUCCESS)
        throw std::runtime_error("checker bug: cannot find the allocation of a device array");
    static std::map<unsigned long long, cudaIpcMemHandle_t> handles;
    if (!handles.count(id)) {
        cudaIpcMemHandle_t handle;
        CUDA_CHECK(cudaIpcGetMemHandle(&handle, reinterpret_cast<void*>(base)));
        handles[id] = handle;
    }
    request.put(wire::Kind::device);
    request.put(static_cast<std::uint64_t>(id));
    request.put_bytes(&handles[id], sizeof(cudaIpcMemHandle_t));
    request.put(static_cast<std::uint64_t>(reinterpret_cast<CUdeviceptr>(pointer) - base));
}

}  // namespace

void put_pointer(wire::Message& request, HostCopies& copies, const void* pointer, bool writable)
{
    if (pointer == nullptr) {
        request.put(wire::Kind::null);
        return;
    }
    cudaPointerAttributes attributes{};
    CUDA_CHECK(cudaPointerGetAttributes(&attributes, pointer));
    if (attributes.type == cudaMemoryTypeUnregistered) {
        copies.add(request, pointer, writable);
        return;
    }
    if (attributes.type != cudaMemoryTypeDevice)
        throw std::runtime_error("checker bug: only device memory from cudaMalloc and host heap arrays can be "
                                 "passed to the student's functions");
    put_device_pointer(request, pointer);
}

}  // namespace workbook::remote
