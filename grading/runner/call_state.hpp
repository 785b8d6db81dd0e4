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

extern std::uint64_t g_call;  // calls so far (serve_call counts them; arguments.cu)

// Practice mode (Kind::device_copy): the judge's allocations shared with the call being decoded,
// by id: the host copy mapped here and, but under a sanitizer, the index of the device copy among
// its Arguments' copies. Two arguments in one allocation share both, so that what the call writes
// through either comes back whole (under a sanitizer each array has its own exact copy).
struct CallCopy {
    char* host = nullptr;
    std::size_t device = SIZE_MAX;
};
extern std::map<std::uint64_t, CallCopy> g_call_copies;  // cleared before each call (run_calls)
extern int g_practice_copies;     // device_copy arguments in the message being served
extern double g_copying_in_ms;    // the time their copies in took (not the call's: own_ms leaves it out)

// Milliseconds since `start`, on the steady clock.
inline double ms_since(std::chrono::steady_clock::time_point start)
{
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace workbook::runner
