// How a call's arguments travel to the runner (calls.hpp): host copies, device arrays, practice mode.
#include "calls.hpp"
#include "call_state.hpp"

#include "common/buffers.hpp"
#include "common/check.hpp"
#include "common/judge.hpp"

#include <cuda.h>
#include <cuda_runtime.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>

namespace workbook::remote {

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

void HostCopies::add_device(wire::Message& request, void* base, std::size_t bytes, unsigned long long id,
                            std::size_t offset, std::size_t extent, bool writable)
{
    request.put(wire::Kind::device_copy);
    request.put(static_cast<std::uint64_t>(id));
    auto shared = std::find_if(copies_.begin(), copies_.end(),
                               [id](const SharedCopy& copy) { return copy.device && copy.id == id; });
    if (shared != copies_.end()) {
        // Already shared with this call: the runner gives both arguments one copy.
        shared->writable = shared->writable || writable;
        request.put(wire::kSameFileAsBefore);
    } else {
        const int fd = memfd_create("workbook-device-array", MFD_CLOEXEC);
        if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0)
            throw std::runtime_error(std::string("cannot share a copy of a device array with the runner: ") +
                                     std::strerror(errno));
        void* copy = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (copy == MAP_FAILED) {
            ::close(fd);
            throw std::runtime_error(std::string("cannot map a copy of a device array for the runner: ") +
                                     std::strerror(errno));
        }
        copies_.push_back({base, copy, bytes, fd, writable, true, id});
        // The whole allocation, guard zones and all: what the call writes past its array comes
        // back too, and is found as in the normal mode. As it is once the judge's own work on
        // any stream (poison, inputs) is done.
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(copy, base, bytes, cudaMemcpyDeviceToHost));
        request.put(request.attach(fd));
    }
    request.put(static_cast<std::uint64_t>(bytes));
    request.put(static_cast<std::uint64_t>(offset));
    request.put(static_cast<std::uint64_t>(extent));
    request.put(static_cast<unsigned char>(writable));
}

void HostCopies::copy_back()
{
    bool to_device = false;
    for (const SharedCopy& copy : copies_) {
        if (!copy.writable) continue;
        if (copy.device) CUDA_CHECK(cudaMemcpy(copy.original, copy.shared, copy.bytes, cudaMemcpyHostToDevice));
        else std::memcpy(copy.original, copy.shared, copy.bytes);
        to_device = to_device || copy.device;
    }
    // A copy from pageable memory may return before it lands: the judge's checks, on any stream,
    // see what the call wrote.
    if (to_device) CUDA_CHECK(cudaDeviceSynchronize());
}

namespace {

// A device allocation of the judge's: where it starts, its size, and its id, unique to it for
// the life of this process.
struct Allocation {
    CUdeviceptr base = 0;
    std::size_t size = 0;
    unsigned long long id = 0;
};

Allocation allocation_of(const void* pointer)
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
    Allocation found;
    const auto device_pointer = reinterpret_cast<CUdeviceptr>(pointer);
    if (address_range(&found.base, &found.size, device_pointer) != CUDA_SUCCESS ||
        attribute(&found.id, CU_POINTER_ATTRIBUTE_BUFFER_ID, device_pointer) != CUDA_SUCCESS)
        throw std::runtime_error("checker bug: cannot find the allocation of a device array");
    return found;
}

// Encodes a device array of the judge's as its allocation's IPC handle and the offset into it
// (the runner maps the allocation, and the student's kernels write the judge's buffer directly),
// with the array's own extent and whether the function may write it: a runner under a
// sanitizer hands the function an exact-size copy, so that a read past the array's end is
// outside what it was given. In practice mode, as a host copy of the allocation instead
// (HostCopies::add_device): the call is then never queued in a batch, as one with host arrays.
void put_device_pointer(wire::Message& request, HostCopies& copies, const void* pointer, bool writable)
{
    Allocation allocation = allocation_of(pointer);
    std::size_t offset = reinterpret_cast<CUdeviceptr>(pointer) - allocation.base;
    const std::size_t extent = array_extent(pointer);
    if (!g_practice_reason.empty()) {
        if (g_call_allocations.insert(allocation.id).second) g_charged.device_bytes += allocation.size;
        // Each call copies its arrays on the runner's CPU: its CPU time is never the call's own
        // (an allocation the runner has never mapped tells Runner::call so).
        static unsigned long long copies_made = 0;
        target_runner().note_allocation((1ull << 63) + ++copies_made);
        copies.add_device(request, reinterpret_cast<void*>(allocation.base), allocation.size, allocation.id, offset,
                          extent, writable);
        return;
    }
    if (g_batches.active) {
        // Timing in batches: the run in this slot gets its own copy of the allocation, as it is
        // now (this run's fresh inputs, its poisoned output).
        SlotCopy& copy = g_batches.slots.at(static_cast<std::size_t>(g_batches.current))[allocation.id];
        if (copy.original == nullptr) {
            copy.original = reinterpret_cast<void*>(allocation.base);
            copy.copy = DeviceBuffer<unsigned char>(allocation.size);
        }
        CUDA_CHECK(cudaMemcpyAsync(copy.copy.data(), copy.original, allocation.size, cudaMemcpyDeviceToDevice));
        allocation = allocation_of(copy.copy.data());
    }
    if (g_call_allocations.insert(allocation.id).second) g_charged.device_bytes += allocation.size;
    target_runner().note_allocation(allocation.id);
    static std::map<unsigned long long, cudaIpcMemHandle_t> handles;
    if (!handles.count(allocation.id)) {
        cudaIpcMemHandle_t handle;
        CUDA_CHECK(cudaIpcGetMemHandle(&handle, reinterpret_cast<void*>(allocation.base)));
        handles[allocation.id] = handle;
    }
    request.put(wire::Kind::device);
    request.put(static_cast<std::uint64_t>(allocation.id));
    request.put_bytes(&handles[allocation.id], sizeof(cudaIpcMemHandle_t));
    request.put(static_cast<std::uint64_t>(offset));
    request.put(static_cast<std::uint64_t>(extent));
    request.put(static_cast<unsigned char>(writable));
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
    put_device_pointer(request, copies, pointer, writable);
}

const std::string& practice_reason() { return g_practice_reason; }

const std::string& find_practice_mode(bool probe_the_runners)
{
    constexpr const char* kDecided = "WORKBOOK_PRACTICE_MODE";  // the parent checker's decision, for a probe run
    // WORKBOOK_FORCE_NO_IPC=1: as if the judge could make no handle; =runner: the runner is sent
    // a handle that is no handle, so that its real open fails (the tests of practice mode).
    const char* forced_value = std::getenv("WORKBOOK_FORCE_NO_IPC");
    const std::string forced = forced_value != nullptr ? forced_value : "";
    const char* decided = std::getenv(kDecided);
    if (forced == "1" || (forced == "runner" && !probe_the_runners && decided == nullptr)) {
        g_practice_reason = "CUDA IPC is switched off by WORKBOOK_FORCE_NO_IPC=" + forced;
    } else if (!probe_the_runners) {
        g_practice_reason = decided != nullptr ? decided : "";
    } else {
        // The judge makes a handle of an allocation of its own; a runner opens it. The reference's
        // runner where there is one: no student code in it can make the answer differ.
        DeviceBuffer<unsigned char> probe(256);
        cudaIpcMemHandle_t handle{};
        const cudaError_t status = cudaIpcGetMemHandle(&handle, probe.data());
        if (forced == "runner") std::memset(&handle, 0, sizeof handle);
        if (status != cudaSuccess) {
            cudaGetLastError();
            g_practice_reason = std::string("CUDA IPC is not available: cudaIpcGetMemHandle failed: ") +
                                cudaGetErrorString(status) + " (" + cudaGetErrorName(status) + ")";
        } else {
            Runner& runner = has_reference_runner() ? reference_runner() : student_runner();
            wire::Message request(wire::Op::probe_ipc);
            request.put(handle);
            try {
                wire::Reader answer = runner.call(request, "a check of CUDA IPC");
                answer.get<double>();
                const bool opened = answer.get<unsigned char>() != 0;
                const std::string error = answer.get_string();
                runner.take_record();
                if (!opened)
                    g_practice_reason = "CUDA IPC is not available: the process that runs the code could not open "
                                        "the checker's handle (cudaIpcOpenMemHandle): " + error +
                                        (forced == "runner" ? ", as WORKBOOK_FORCE_NO_IPC=runner asked" : "");
            } catch (const std::exception&) {
                // The runner did not answer (it could not start, say): the first call says why,
                // as without this check. Nothing tells that IPC is missing.
            }
        }
    }
    if (g_practice_reason.empty()) unsetenv(kDecided);
    else setenv(kDecided, g_practice_reason.c_str(), 1);
    return g_practice_reason;
}

}  // namespace workbook::remote
