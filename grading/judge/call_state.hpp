/// \file call_state.hpp
/// \brief What the judge's two files of calls share (calls.hpp): calls.cpp sends the calls and
/// times them in batches, arguments.cpp encodes their arguments, which it copies for each slot
/// of a batch and charges to the call (Charged::device_bytes).
#pragma once

#include "calls.hpp"

#include "common/buffers.hpp"
#include "common/launch_record.hpp"
#include "grading/protocol/wire.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace workbook::remote {

/// \brief One device allocation of the judge's as one slot of a batch holds it (Batches::slots):
/// the run in that slot is given its own copy of every allocation its arrays are in.
struct SlotCopy {
    /// The start of the judge's allocation; restore_slot copies `copy` back into it.
    void* original = nullptr;
    /// The slot's copy of the whole allocation: made the first time a call in this slot is given
    /// an array in it, and refreshed from `original` each time one is (arguments.cpp).
    DeviceBuffer<unsigned char> copy;
};

/// \brief Timing in batches (begin_batches): the slots, and the calls queued for the next batch.
struct Batches {
    /// Whether calls are timed in batches: set by begin_batches, cleared by end_batches. While it
    /// is set, a call that can be queued is (queue_in_batch), and each device array a call is
    /// given is copied into the current slot (arguments.cpp).
    bool active = false;
    /// The slot being filled (fill_slot): the calls made now are that slot's run.
    int current = 0;
    /// One map per slot, from the id of the judge's allocation to that slot's copy of it
    /// (begin_batches makes them, resize_batches adds more).
    std::vector<std::map<unsigned long long, SlotCopy>> slots;
    /// The queued calls' descriptions (call_body and their arguments), one after another, which
    /// run_batch sends as one message and then empties.
    wire::Message queued;
    /// How many calls `queued` holds; run_batch sets it back to 0 when it sends them.
    std::uint32_t count = 0;
    /// The runner the queued calls go to: the target runner of the first call queued since
    /// begin_batches; queue_in_batch refuses a call for another runner as a checker bug.
    Runner* runner = nullptr;
    /// The last batch's record (what the runner saw launched and copied), with its bytes copied to
    /// the host shared out among the batch's calls: handed to each slot's check in turn in place of
    /// the runner's (record_from_runner).
    LaunchRecord record;
    /// How many more times `record` is handed out: run_batch sets it to the number of slots, each
    /// hand-out takes one off, and at 0 the record is the runner's own again.
    int replays = 0;
};

/// \brief The batches being timed (begin_batches to end_batches, in calls.cpp); inactive otherwise.
extern Batches g_batches;

/// \brief What the calls since the last take_charged took: send_call (calls.cpp) counts each call
/// and adds its time with its round trip still in it, which take_charged takes off (in practice
/// mode, the runner's own time of the call, with no round trip in it); arguments.cpp adds the size
/// of each device allocation a call is given (Charged::device_bytes).
extern Charged g_charged;

/// \brief The ids of the device allocations the call being encoded was given (call_body empties
/// it), so that each one's size is added to g_charged once per call, however many of the call's
/// arrays are in it.
extern std::set<unsigned long long> g_call_allocations;

/// \brief Why this checker runs in practice mode, as find_practice_mode (arguments.cpp) decided,
/// or "" when it does not; practice_reason() returns it, and calls are encoded and charged in
/// practice mode's way while it is not empty.
extern std::string g_practice_reason;

}  // namespace workbook::remote
