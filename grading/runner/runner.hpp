/// \file runner.hpp
/// \brief The runner's side of the two processes: the student's file, linked with a dispatcher
/// that calls its functions when the judge asks (grading/judge/calls.hpp is the judge's side).
///
/// The runner holds the lab's API functions, this dispatcher and the CUPTI recording of what
/// each call launched; nothing of the judge's: no key, no results channel, no reference, no
/// comparison and no clock that counts. Its table of functions is generated from the lab's
/// header (grading/buildtools/api_stubs.py):
///
///     const std::vector<Function>& lab_functions()
///     {
///         static const std::vector<Function> functions = {serve("launch_vector_add", &::launch_vector_add)};
///         return functions;
///     }
#pragma once

#include "grading/protocol/wire.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace workbook::runner {

/// \brief An exact-size copy of one of the judge's device arrays, which a runner under a
/// sanitizer hands the student's function instead of the array (Arguments).
struct ExactCopy {
    void* copy;          ///< the copy, cudaMalloc'd here
    void* array;         ///< the judge's array, mapped here
    std::size_t bytes;   ///< the size of both
    bool writable;       ///< copied back after the call
};

/// \brief The judge's arrays as this process sees them: device allocations opened from their
/// IPC handles (kept while the judge keeps using them), host copies mapped for one call.
class Arguments {
public:
    Arguments(const Arguments&) = delete;
    Arguments& operator=(const Arguments&) = delete;
    /// \brief Starts the arguments of one call.
    /// \param message the call, positioned at its first argument
    /// \param exact hand the function exact-size copies of the device arrays (under a sanitizer)
    Arguments(wire::Reader& message, bool exact) : message_(message), exact_(exact) {}
    ~Arguments();
    /// \brief After the call: copies the exact-size copies the function may write back into the
    /// judge's arrays, and frees them.
    void finish();
    /// \brief The next argument, which the judge encoded as a pointer.
    void* next_pointer();
    /// \brief The next argument, which the judge encoded as a number of `size` bytes.
    /// \param size the number's size
    const char* next_value(std::size_t size);
    /// \brief Closes the device allocations that neither this call nor the one before used.
    static void forget_stale_allocations();

private:
    wire::Reader& message_;
    bool exact_ = false;
    std::vector<std::pair<void*, std::size_t>> host_maps_;
    std::vector<ExactCopy> exact_copies_;
};

/// \brief Decodes the next argument as a T.
template <class T>
T get_argument(Arguments& arguments)
{
    if constexpr (std::is_pointer<T>::value) {
        return static_cast<T>(arguments.next_pointer());
    } else {
        static_assert(std::is_arithmetic<T>::value, "an API function takes numbers and arrays");
        T value;
        std::memcpy(&value, arguments.next_value(sizeof value), sizeof value);
        return value;
    }
}

/// \brief Encodes a function's result: a number, or a std::vector of plain values.
template <class R>
void put_result(wire::Message& reply, const R& result)
{
    if constexpr (std::is_arithmetic<R>::value) {
        reply.put(result);
    } else {
        reply.put(static_cast<std::uint64_t>(result.size()));
        for (const auto& element : result) reply.put(element);
    }
}

/// \brief One API function the runner serves.
struct Function {
    const char* name;      ///< as the lab's header names it
    const void* address;   ///< null when the student's file lacks it (declared weak)
    /// Decodes the arguments, calls the function and encodes its result.
    std::function<void(Arguments& arguments, wire::Message& reply)> invoke;
};

/// \brief The table entry for a function of the lab's header.
/// \param name its name
/// \param function its address (null when the file lacks it)
template <class R, class... A>
Function serve(const char* name, R (*function)(A...))
{
    return {name, reinterpret_cast<const void*>(function), [function](Arguments& arguments, wire::Message& reply) {
                // A braced list evaluates left to right: the arguments are read in order.
                std::tuple<A...> values{get_argument<A>(arguments)...};
                if constexpr (std::is_void<R>::value) std::apply(function, values);
                else put_result(reply, std::apply(function, values));
            }};
}

/// \brief The lab's API functions: defined by the file grading/buildtools/api_stubs.py generates.
const std::vector<Function>& lab_functions();

/// \brief Puts back the device state a call may have set: the persisting-L2 carve-out and its
/// lines, the default stream's access-policy window, the cache preference (device_state.cu).
void reset_device_state();

/// \brief Starts counting the page-locked host memory the student's code holds afresh, from
/// what it holds now (device_state.cu).
void reset_pinned_watch();

/// \brief The most page-locked host memory the student's code held since reset_pinned_watch, in
/// bytes.
std::size_t most_pinned_bytes();

}  // namespace workbook::runner
