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

// One slot of a batch: its own copy of every device allocation its run was given.
struct SlotCopy {
    void* original = nullptr;  // the judge's allocation
    DeviceBuffer<unsigned char> copy;
};

// Timing in batches (begin_batches): the slots, and the calls queued for the next batch.
struct Batches {
    bool active = false;
    int current = 0;                                             // the slot being filled
    std::vector<std::map<unsigned long long, SlotCopy>> slots;  // by the original allocation's id
    wire::Message queued;                                        // the calls' descriptions, one after another
    std::uint32_t count = 0;
    Runner* runner = nullptr;  // where the queued calls go
    // The last batch's record, handed to each slot's check in turn (take_record).
    LaunchRecord record;
    int replays = 0;
};

extern Batches g_batches;                          // the batches being timed (begin_batches, calls.cpp)
extern Charged g_charged;                          // calls since take_charged, their time with each round trip
extern std::set<unsigned long long> g_call_allocations;  // the device allocations the call being encoded was given
extern std::string g_practice_reason;              // why this checker runs in practice mode (find_practice_mode), or ""

}  // namespace workbook::remote
