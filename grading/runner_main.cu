// The runner's main(): serve the judge's calls of the student's functions, one at a time.
//
// For each call: map the judge's arrays, start CUPTI's recording, call the function, note when
// the default stream has drained after it returned, wait for the whole GPU, answer "done", then
// send what CUPTI saw. The judge's clock stops at "done"; the record follows outside it.
// runner.hpp and remote.hpp describe the two sides; docs/grading.md the reasons.
#include "runner.hpp"

#include "common/check.hpp"
#include "common/launch_record.hpp"

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

// Launched on the default stream after a call returns: it starts once everything the default
// stream waits for is done, so a kernel of the call still running then was on another stream.
__global__ void workbook_runner_drained() {}

namespace workbook::runner {

namespace {

constexpr const char* kDrainedMarker = "_Z23workbook_runner_drainedv";

struct Opened {
    void* base = nullptr;
    std::uint64_t last_used = 0;
};

std::map<std::uint64_t, Opened> g_opened;  // the judge's allocation id -> that allocation, mapped here
std::uint64_t g_call = 0;                  // calls so far

void* open_allocation(std::uint64_t id, const cudaIpcMemHandle_t& handle)
{
    Opened& opened = g_opened[id];
    if (opened.base == nullptr) {
        const cudaError_t status = cudaIpcOpenMemHandle(&opened.base, handle, cudaIpcMemLazyEnablePeerAccess);
        if (status != cudaSuccess) {
            g_opened.erase(id);
            cudaGetLastError();
            throw std::runtime_error(std::string("the runner could not map an array of the judge's: ") +
                                     cudaGetErrorString(status) + " (" + cudaGetErrorName(status) + ")");
        }
    }
    opened.last_used = g_call;
    return opened.base;
}

std::string g_cupti_unavailable;  // why CUPTI cannot record here (another tool holds it), or ""

}  // namespace

Arguments::~Arguments()
{
    for (const auto& [address, bytes] : host_maps_) munmap(address, bytes);
}

void* Arguments::next_pointer()
{
    switch (message_.get<wire::Kind>()) {
    case wire::Kind::null:
        return nullptr;
    case wire::Kind::device: {
        const auto id = message_.get<std::uint64_t>();
        const auto handle = message_.get<cudaIpcMemHandle_t>();
        const auto offset = message_.get<std::uint64_t>();
        return static_cast<char*>(open_allocation(id, handle)) + offset;
    }
    case wire::Kind::host: {
        const int fd = message_.take_fd(message_.get<std::uint32_t>());
        const auto bytes = static_cast<std::size_t>(message_.get<std::uint64_t>());
        void* address = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        ::close(fd);
        if (address == MAP_FAILED) throw std::runtime_error("the runner could not map a host array of the judge's");
        host_maps_.push_back({address, bytes});
        return address;
    }
    default:
        throw std::runtime_error("the judge sent a number where the function takes an array");
    }
}

const char* Arguments::next_value(std::size_t size)
{
    if (message_.get<wire::Kind>() != wire::Kind::value || message_.get<std::uint32_t>() != size)
        throw std::runtime_error("the judge sent an argument of another type than the function takes");
    return message_.take(size);
}

void Arguments::forget_stale_allocations()
{
    for (auto it = g_opened.begin(); it != g_opened.end();) {
        if (it->second.last_used + 1 < g_call) {
            cudaIpcCloseMemHandle(it->second.base);
            cudaGetLastError();  // nothing of this may reach the student's next call
            it = g_opened.erase(it);
        } else {
            ++it;
        }
    }
}

namespace {

const Function* find(const std::string& name)
{
    for (const Function& function : lab_functions())
        if (name == function.name && function.address != nullptr) return &function;
    return nullptr;
}

void put_record(wire::Message& message, const LaunchRecord& record)
{
    message.put(static_cast<std::uint32_t>(record.kernels.size()));
    for (const std::string& kernel : record.kernels) message.put_string(kernel);
    message.put(static_cast<std::uint64_t>(record.device_to_host_bytes));
    message.put(static_cast<std::uint32_t>(record.still_running.size()));
    for (const std::string& kernel : record.still_running) message.put_string(kernel);
    message.put_string(record.unavailable);
}

// One call or ping: run it, answer done, then send the record.
bool serve_call(int socket, wire::Reader& request, bool ping)
{
    ++g_call;
    const std::string name = ping ? "" : request.get_string();
    const bool profile = !ping && request.get<unsigned char>() != 0;

    wire::Message done(wire::Op::done);
    wire::Message result;  // the result's fields, appended to done when all went well
    wire::Status status = wire::Status::ok;
    cudaError_t code = cudaSuccess;
    std::string text;
    bool recording = false;
    float reported_ms = 0;
    try {
        // Arguments (and the host arrays they map) live until the record is sent.
        Arguments arguments(request);
        if (g_cupti_unavailable.empty()) {
            try {
                cupti_begin_recording();
                recording = true;
            } catch (const std::exception& e) {
                g_cupti_unavailable = e.what();  // under compute-sanitizer or ncu: they hold CUPTI
            }
        }
        cudaGetLastError();  // the student's call starts with no error pending from the runner's
        // This process's own timing of the call, as time_gpu times the reference in the judge:
        // a figure the judge uses only where its own clock agrees (timing.hpp).
        static cudaEvent_t before = nullptr, after = nullptr;
        if (before == nullptr) {
            CUDA_CHECK(cudaEventCreate(&before));
            CUDA_CHECK(cudaEventCreate(&after));
        }
        // The GPU switches between the judge's context and this one at a cost (about 0.15 ms on
        // an H100): a first kernel takes the switch, so that the events time the call alone.
        workbook_runner_drained<<<1, 1, 0, cudaStreamLegacy>>>();
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaEventRecord(before, cudaStreamLegacy));
        if (!ping) {
            const Function* function = find(name);
            if (function == nullptr) throw std::runtime_error(name + " is missing from your file");
            if (profile) nvtxRangePushA("workbook-profile");
            function->invoke(arguments, result);
            if (profile) nvtxRangePop();
        }
        CUDA_CHECK(cudaEventRecord(after, cudaStreamLegacy));
        CUDA_CHECK(cudaEventSynchronize(after));
        CUDA_CHECK(cudaEventElapsedTime(&reported_ms, before, after));
        // What the caller's next use of the default stream would wait for: a kernel of the call
        // still running when this marker starts ran on a stream the default stream ignores.
        workbook_runner_drained<<<1, 1, 0, cudaStreamLegacy>>>();
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
    } catch (const CudaError& e) {
        status = wire::Status::cuda_error;
        code = e.code();
        text = e.what();
    } catch (const std::exception& e) {
        status = wire::Status::exception;
        text = e.what();
    }
    if (status == wire::Status::ok) {
        // An error raised inside a kernel shows at the first call that waits for it.
        const cudaError_t late = cudaGetLastError();
        if (late != cudaSuccess) {
            status = wire::Status::cuda_error;
            code = late;
            text = std::string(cudaGetErrorString(late)) + " (" + cudaGetErrorName(late) + ")";
        }
    }
    done.put(status);
    done.put(static_cast<std::int32_t>(code));
    done.put(static_cast<unsigned char>(status == wire::Status::cuda_error && is_sticky(code)));
    done.put_string(text);
    done.put(reported_ms);
    if (status == wire::Status::ok) done.put_bytes(result.bytes().data(), result.bytes().size());
    if (!wire::send(socket, done)) return false;

    wire::Message record(wire::Op::record);
    LaunchRecord seen;
    if (!recording) seen.unavailable = g_cupti_unavailable.empty() ? "the call failed first" : g_cupti_unavailable;
    if (recording && !(status == wire::Status::cuda_error && is_sticky(code))) {
        try {
            seen = cupti_end_recording(kDrainedMarker);
        } catch (const std::exception& e) {
            seen.unavailable = e.what();
        }
    }
    put_record(record, seen);
    if (!wire::send(socket, record)) return false;
    Arguments::forget_stale_allocations();
    return true;
}

// Readies CUDA's context, the marker kernel's module and CUPTI while the judge starts too, so
// that the first test does not wait for them. What fails here fails again, and is reported, at
// the first call.
void warm_up()
{
    if (cudaFree(nullptr) != cudaSuccess) {
        cudaGetLastError();
        return;
    }
    bool recording = false;
    try {
        cupti_begin_recording();
        recording = true;
    } catch (const std::exception& e) {
        g_cupti_unavailable = e.what();  // under compute-sanitizer or ncu: they hold CUPTI
    }
    workbook_runner_drained<<<1, 1, 0, cudaStreamLegacy>>>();
    const bool ran = cudaDeviceSynchronize() == cudaSuccess;
    if (recording && ran) {
        try {
            cupti_end_recording(kDrainedMarker);
        } catch (const std::exception&) {
        }
    }
    cudaGetLastError();
}

}  // namespace

}  // namespace workbook::runner

int main()
{
    using namespace workbook;
    // Nothing here outlives the judge: the kernel ends this process when its parent goes.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    const char* fd = std::getenv("WORKBOOK_RUNNER_FD");
    if (fd == nullptr) {
        std::fprintf(stderr, "this is a checker's runner: the checker starts it (run check_NN_name instead)\n");
        return 2;
    }
    const int socket = std::atoi(fd);
    unsetenv("WORKBOOK_RUNNER_FD");

    // Waiting for the GPU by spinning keeps the judge's round trip short and steady.
    cudaSetDeviceFlags(cudaDeviceScheduleSpin);

    wire::Message hello(wire::Op::hello);
    std::uint32_t defined = 0;
    for (const runner::Function& function : runner::lab_functions()) defined += function.address != nullptr;
    hello.put(defined);
    for (const runner::Function& function : runner::lab_functions())
        if (function.address != nullptr) hello.put_string(function.name);
    if (!wire::send(socket, hello)) return 1;
    runner::warm_up();

    for (;;) {
        wire::Reader request;
        if (!wire::receive(socket, request)) return 0;  // the judge is gone
        const auto op = request.get<wire::Op>();
        if (op == wire::Op::exit) {
            // Let go of the output, then say so by closing the socket: the judge need not wait
            // while CUDA tears this process down. (A tool wrapped around it keeps its own.)
            wire::release_output();
            close(socket);
            return 0;
        }
        if (op != wire::Op::call && op != wire::Op::ping) return 3;
        if (!runner::serve_call(socket, request, op == wire::Op::ping)) return 0;
        std::fflush(stdout);
    }
}
