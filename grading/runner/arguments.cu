// The judge's arrays as the runner sees them (Arguments in runner.hpp): opened, mapped or copied for a call.
#include "runner.hpp"
#include "call_state.hpp"

#include "common/check.hpp"

#include <cuda_runtime.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace workbook::runner {

namespace {

struct Opened {
    void* base = nullptr;
    std::uint64_t last_used = 0;
};

std::map<std::uint64_t, Opened> g_opened;  // the judge's allocation id -> that allocation, mapped here

}  // namespace

std::uint64_t g_call = 0;                  // calls so far
std::map<std::uint64_t, CallCopy> g_call_copies;  // practice mode's copies, by id (call_state.hpp)
int g_practice_copies = 0;     // device_copy arguments in the message being served
double g_copying_in_ms = 0;    // the time their copies in took (not the call's: own_ms leaves it out)

namespace {

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

}  // namespace

Arguments::~Arguments()
{
    for (const auto& [address, bytes] : host_maps_) munmap(address, bytes);
    for (const ExactCopy& copy : exact_copies_) cudaFree(copy.copy);
}

void Arguments::finish()
{
    for (ExactCopy& copy : exact_copies_) {
        // `array` is the judge's allocation mapped here, or in practice mode in the host copy of
        // it that the judge shared (one of host_maps_).
        const bool to_host = std::any_of(host_maps_.begin(), host_maps_.end(), [&copy](const auto& map) {
            const char* start = static_cast<const char*>(map.first);
            return copy.array >= start && copy.array < start + map.second;
        });
        if (copy.writable)
            CUDA_CHECK(cudaMemcpy(copy.array, copy.copy, copy.bytes, to_host ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice));
        CUDA_CHECK(cudaFree(copy.copy));
    }
    exact_copies_.clear();
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
        const auto extent = static_cast<std::size_t>(message_.get<std::uint64_t>());
        const bool writable = message_.get<unsigned char>() != 0;
        char* array = static_cast<char*>(open_allocation(id, handle)) + offset;
        if (!exact_ || extent == 0) return array;
        // Under a sanitizer: a copy of exactly the array's size, so that the tool sees a read or
        // a write past its end as one (the judge's allocation around it is larger).
        void* copy = nullptr;
        CUDA_CHECK(cudaMalloc(&copy, extent));
        exact_copies_.push_back({copy, array, extent, writable});
        CUDA_CHECK(cudaMemcpy(copy, array, extent, cudaMemcpyDeviceToDevice));
        return copy;
    }
    case wire::Kind::device_copy: {
        // Practice mode: the judge's allocation as a host copy in a shared file. The function
        // gets a device copy of it, made here; finish() copies it back into the file when the
        // function may write it. Under a sanitizer, as above, a copy of exactly the array.
        const auto started = std::chrono::steady_clock::now();
        const auto id = message_.get<std::uint64_t>();
        const auto index = message_.get<std::uint32_t>();
        const auto size = static_cast<std::size_t>(message_.get<std::uint64_t>());
        const auto offset = static_cast<std::size_t>(message_.get<std::uint64_t>());
        const auto extent = static_cast<std::size_t>(message_.get<std::uint64_t>());
        const bool writable = message_.get<unsigned char>() != 0;
        ++g_practice_copies;
        CallCopy& shared = g_call_copies[id];
        if (shared.host == nullptr) {
            if (index == wire::kSameFileAsBefore)
                throw std::runtime_error("the judge sent a copy of an array that it never shared");
            const int fd = message_.take_fd(index);
            void* address = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            ::close(fd);
            if (address == MAP_FAILED) throw std::runtime_error("the runner could not map a copy of the judge's array");
            host_maps_.push_back({address, size});
            shared.host = static_cast<char*>(address);
        }
        if (offset > size || extent > size - offset)
            throw std::runtime_error("the judge sent an array outside its allocation");
        char* result = nullptr;
        if (exact_ && extent > 0) {
            void* copy = nullptr;
            CUDA_CHECK(cudaMalloc(&copy, extent));
            exact_copies_.push_back({copy, shared.host + offset, extent, writable});
            CUDA_CHECK(cudaMemcpy(copy, shared.host + offset, extent, cudaMemcpyHostToDevice));
            result = static_cast<char*>(copy);
        } else if (shared.device == SIZE_MAX) {
            void* copy = nullptr;
            CUDA_CHECK(cudaMalloc(&copy, size));
            shared.device = exact_copies_.size();
            exact_copies_.push_back({copy, shared.host, size, writable});
            CUDA_CHECK(cudaMemcpy(copy, shared.host, size, cudaMemcpyHostToDevice));
            result = static_cast<char*>(copy) + offset;
        } else {
            ExactCopy& copy = exact_copies_.at(shared.device);
            copy.writable = copy.writable || writable;
            result = static_cast<char*>(copy.copy) + offset;
        }
        // The copy is finished before the function starts, and its time is not the call's.
        CUDA_CHECK(cudaDeviceSynchronize());
        g_copying_in_ms += ms_since(started);
        return result;
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

}  // namespace workbook::runner
