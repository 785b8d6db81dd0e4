/// \file call_state.hpp
/// \brief What the runner's two files share about the message being served: main.cu serves it
/// (serve_call, run_calls), arguments.cu decodes its arguments (Arguments in runner.hpp).
#pragma once

#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <map>

namespace workbook::runner {

/// \brief The call and ping messages served so far, the one being served included: serve_call
/// (main.cu) counts them, and arguments.cu marks each device allocation it maps with the count, so
/// that Arguments::forget_stale_allocations closes those that neither this message nor the one
/// before used.
extern std::uint64_t g_call;

/// \brief Practice mode (Kind::device_copy): one allocation of the judge's shared with the call
/// being decoded (g_call_copies): the host copy mapped here and, but under a sanitizer, the index
/// of the device copy among its Arguments' copies. Two arguments in one allocation share both, so
/// that what the call writes through either comes back whole (under a sanitizer each array has its
/// own exact copy).
struct CallCopy {
    /// The allocation's host copy, mapped from the judge's shared-memory file by the call's first
    /// argument in it; null until then.
    char* host = nullptr;
    /// The index of the allocation's device copy among the Arguments' copies, or SIZE_MAX while
    /// none is made (always, under a sanitizer).
    std::size_t device = SIZE_MAX;
};

/// \brief Practice mode: the judge's allocations shared with the call being decoded, by id;
/// run_calls (main.cu) empties it before each call.
extern std::map<std::uint64_t, CallCopy> g_call_copies;

/// \brief The device_copy arguments (practice mode) decoded in the message being served:
/// serve_call (main.cu) sets it to 0, arguments.cu counts them, and where there are any,
/// serve_call ends the launch record before they are copied back to the judge.
extern int g_practice_copies;

/// \brief The milliseconds the message being served spent decoding its device_copy arguments
/// (mapping their host copies, making and filling their device copies): run_calls (main.cu) sets
/// it to 0 and takes it off its own time of the calls (own_ms), since that is not the call's work;
/// arguments.cu adds each argument's time.
extern double g_copying_in_ms;

/// \brief Milliseconds from `start` to now, on the steady clock.
/// \param start the moment to count from
inline double ms_since(std::chrono::steady_clock::time_point start)
{
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace workbook::runner
