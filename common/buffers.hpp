/// \file buffers.hpp
/// \brief RAII device buffers, output poisoning and guard zones.
///
/// Checkers never call cudaMalloc or cudaFree themselves: a DeviceBuffer frees its memory when
/// it goes out of scope, also when a test fails with an exception. Outputs live in a
/// GuardedOutput, which fills the output with a poison value before every run (so an element
/// the kernel never wrote is seen as such) and surrounds it with canary bytes (so a write past
/// either end is seen without a sanitizer).
#pragma once

#include "check.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace workbook {

/// \brief Notes where a device array of the judge's ends, so that array_extent can tell it
/// (DeviceBuffer and GuardedOutput note theirs).
/// \param data the array's first byte
/// \param bytes its size
void note_device_array(const void* data, std::size_t bytes);

/// \brief Forgets an array noted by note_device_array.
/// \param data the array's first byte
void forget_device_array(const void* data);

/// \brief The bytes from `pointer` to the end of the smallest noted array that holds it, or 0
/// when no noted array does. A runner under compute-sanitizer hands the student's function
/// copies of exactly this size, so that a read past an array's end is outside what it was
/// given (grading/judge/calls.hpp), though the allocation behind the array is larger.
/// \param pointer a device address
std::size_t array_extent(const void* pointer);

/// \brief An array in device memory that frees itself.
/// \tparam T a trivially copyable element type
///
/// \snippet common/judge_internal.cuh output
template <class T>
class DeviceBuffer {
    static_assert(std::is_trivially_copyable<T>::value, "device buffers hold plain data");

public:
    DeviceBuffer() = default;

    /// \brief Allocates count elements (uninitialised).
    /// \param count the number of elements
    explicit DeviceBuffer(std::size_t count) : count_(count)
    {
        // Whole 2 MiB pages: the driver packs smaller allocations into one page, and a page can
        // be shared with the runner, the process that holds the student's code, by one CUDA IPC
        // handle only (grading/judge/calls.hpp); a buffer of its own can be shared on its own.
        constexpr std::size_t page = std::size_t(2) << 20;
        if (count_ > 0) CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), (bytes() + page - 1) / page * page));
        if (data_ != nullptr) note_device_array(data_, bytes());
    }

    /// \brief Allocates a buffer and copies host data into it.
    /// \param host the elements to upload
    /// \snippet common/judge_internal.cuh output
    explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }

    ~DeviceBuffer()
    {
        if (data_ != nullptr) forget_device_array(data_);
        cudaFree(data_);  // nothing to report from a destructor
    }

    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    /// \brief Takes over another buffer's memory; other is left empty.
    /// \param other the buffer to move from
    DeviceBuffer(DeviceBuffer&& other) noexcept { swap(other); }
    /// \brief Swaps memory with another buffer; other frees this one's old memory.
    /// \param other the buffer to move from
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept
    {
        swap(other);
        return *this;
    }

    /// \brief The device address of the first element.
    T* data() { return data_; }
    /// \brief The device address of the first element.
    const T* data() const { return data_; }
    /// \brief The number of elements.
    std::size_t size() const { return count_; }
    /// \brief The size in bytes.
    std::size_t bytes() const { return count_ * sizeof(T); }

    /// \brief Copies host elements into the buffer; the sizes must match.
    /// \param host exactly size() elements
    void upload(const std::vector<T>& host)
    {
        if (host.size() != count_) throw std::invalid_argument("DeviceBuffer::upload: size mismatch");
        if (count_ > 0)
            CUDA_CHECK(cudaMemcpy(data_, host.data(), bytes(), cudaMemcpyHostToDevice));
    }

    /// \brief Copies the buffer back to the host.
    /// \return size() elements
    std::vector<T> download() const
    {
        std::vector<T> host(count_);
        if (count_ > 0)
            CUDA_CHECK(cudaMemcpy(host.data(), data_, bytes(), cudaMemcpyDeviceToHost));
        return host;
    }

    /// \brief Copies one element back to the host: a spot check without reading the whole buffer.
    /// \param index the element, below size()
    T at(std::size_t index) const
    {
        if (index >= count_) throw std::out_of_range("DeviceBuffer::at: index past the end");
        T value;
        CUDA_CHECK(cudaMemcpy(&value, data_ + index, sizeof(T), cudaMemcpyDeviceToHost));
        return value;
    }

    /// \brief Sets every byte of the buffer to one value.
    /// \param value the byte to write
    void fill_bytes(unsigned char value)
    {
        if (count_ > 0) CUDA_CHECK(cudaMemset(data_, value, bytes()));
    }

private:
    void swap(DeviceBuffer& other) noexcept
    {
        std::swap(data_, other.data_);
        std::swap(count_, other.count_);
    }

    T* data_ = nullptr;
    std::size_t count_ = 0;
};

/// \brief The byte an output is filled with before each run.
///
/// For float and double, all-ones bytes are a NaN: no correct result equals it and any
/// arithmetic on it stays NaN. For integers, 0xCD repeated is a large negative value that no lab
/// produces.
/// \tparam T the element type
template <class T>
constexpr unsigned char poison_byte()
{
    return std::is_floating_point<T>::value ? 0xFF : 0xCD;
}

/// \brief The byte the guard zones around an output are filled with.
constexpr unsigned char canary_byte = 0xA5;

/// \brief Whether a value still holds the poison pattern, i.e. was never written.
/// \param value an element read back from an output
/// \snippet common/tests/test_common.cpp poison
template <class T>
bool is_poison(const T& value)
{
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    for (unsigned char b : bytes)
        if (b != poison_byte<T>()) return false;
    return true;
}

/// \brief Counts the elements of a host array that still hold the poison pattern.
/// \param data the array
/// \param count its length
template <class T>
std::size_t count_poison(const T* data, std::size_t count)
{
    std::size_t n = 0;
    for (std::size_t i = 0; i < count; ++i) n += is_poison(data[i]);
    return n;
}

/// \brief Fills a host array with the poison pattern.
/// \param host the array to poison
/// \snippet common/tests/test_common.cpp poison
template <class T>
void poison_host(std::vector<T>& host)
{
    if (!host.empty()) std::memset(host.data(), poison_byte<T>(), host.size() * sizeof(T));
}

/// \brief What a guard-zone check found: elements written before or after the output.
struct GuardReport {
    std::size_t before = 0;      ///< changed elements in the guard before element 0
    std::size_t after = 0;       ///< changed elements in the guard after the last element
    std::size_t first_before = 0;  ///< distance before element 0 of the changed element nearest to it (1 = index -1)
    std::size_t first_after = 0;   ///< index (counting from element 0) of the first changed element past the end

    /// \brief True when no guard element changed.
    bool intact() const { return before == 0 && after == 0; }

    /// \brief A sentence for the student, e.g. "3 elements written past the end of c (c[1000] to ...)".
    /// \param name the output's name in the lab, e.g. "c"
    /// \param count the output's length
    /// \snippet common/judge.cu judge
    std::string describe(const std::string& name, std::size_t count) const;
};

/// \brief Finds the guard elements whose bytes are no longer the canary pattern.
/// \param guard_before the guard read back from before the output
/// \param guard_after the guard read back from after the output
/// \param elem_size the size of one output element in bytes
/// \param count the output's length, to number the elements past the end
/// \snippet common/tests/test_common.cpp inspect guards
GuardReport inspect_guards(const std::vector<unsigned char>& guard_before,
                           const std::vector<unsigned char>& guard_after, std::size_t elem_size,
                           std::size_t count);

/// \brief An output array in device memory with poison inside and canaries around it.
/// \tparam T the element type
///
/// \snippet common/judge_internal.cuh output
template <class T>
class GuardedOutput {
public:
    /// Bytes of guard on each side; a multiple of 256 keeps data() aligned for vector loads.
    static constexpr std::size_t guard_bytes = 64 * 1024;

    /// \brief Allocates count elements plus the two guard zones, already poisoned.
    /// \param count the number of output elements
    /// \snippet common/judge_internal.cuh output
    explicit GuardedOutput(std::size_t count)
        : count_(count), storage_(2 * guard_bytes + count * sizeof(T))
    {
        note_device_array(data(), count * sizeof(T));
        poison();
    }
    ~GuardedOutput()
    {
        if (storage_.data() != nullptr) forget_device_array(data());
    }
    /// \brief Takes over another output's storage; other is left empty.
    GuardedOutput(GuardedOutput&&) = default;
    /// \brief Swaps storage with another output, which frees this one's old storage.
    GuardedOutput& operator=(GuardedOutput&&) = default;

    /// \brief The device address of output element 0 (the guard lies before it).
    T* data() { return reinterpret_cast<T*>(storage_.data() + guard_bytes); }
    /// \brief The number of output elements.
    std::size_t size() const { return count_; }

    /// \brief Fills the output with poison and both guards with canaries. Call before each run.
    void poison()
    {
        CUDA_CHECK(cudaMemset(storage_.data(), canary_byte, guard_bytes));
        if (count_ > 0) CUDA_CHECK(cudaMemset(data(), poison_byte<T>(), count_ * sizeof(T)));
        CUDA_CHECK(cudaMemset(storage_.data() + guard_bytes + count_ * sizeof(T), canary_byte,
                              guard_bytes));
    }

    /// \brief Copies the output (without guards) back to the host.
    std::vector<T> download() const
    {
        std::vector<T> host(count_);
        if (count_ > 0)
            CUDA_CHECK(cudaMemcpy(host.data(), storage_.data() + guard_bytes, count_ * sizeof(T),
                                  cudaMemcpyDeviceToHost));
        return host;
    }

    /// \brief Reads both guard zones back and reports any element a kernel wrote there.
    /// \snippet common/judge.cu judge
    GuardReport check_guards() const
    {
        std::vector<unsigned char> before(guard_bytes), after(guard_bytes);
        CUDA_CHECK(cudaMemcpy(before.data(), storage_.data(), guard_bytes, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(after.data(), storage_.data() + guard_bytes + count_ * sizeof(T),
                              guard_bytes, cudaMemcpyDeviceToHost));
        return inspect_guards(before, after, sizeof(T), count_);
    }

private:
    std::size_t count_;
    DeviceBuffer<unsigned char> storage_;
};

}  // namespace workbook
