// Checker for lab 03, shared-memory transpose.
//
// Correctness of both steps (the unpadded tile, then the padded one) on awkward shapes; the
// padded kernel's bandwidth beside the reference's; proof that the padding removed the bank
// conflicts, from Nsight Compute's counters or, where they cannot be read, from timing against
// the unpadded reference; and compute-sanitizer's racecheck.
#include "transpose_cases.hpp"

#include "03_shared_transpose.hpp"
// The reference solution's functions, with the types of yours: its object is linked beside yours
// with every name moved into namespace reference (grading/buildtools/reference_object.py).
namespace reference {
decltype(::launch_transpose_padded) launch_transpose_padded;
decltype(::launch_transpose_unpadded) launch_transpose_unpadded;
}  // namespace reference

#include <string>
#include <vector>

using namespace workbook;

namespace {

Call unpadded(int rows, int cols) { return transpose::call(launch_transpose_unpadded, "launch_transpose_unpadded", rows, cols); }
Call padded(int rows, int cols) { return transpose::call(launch_transpose_padded, "launch_transpose_padded", rows, cols); }
void check_unpadded(int rows, int cols) { check(unpadded(rows, cols)); }
void check_padded(int rows, int cols) { check(padded(rows, cols)); }

constexpr int kProfiledSize = 4096;  // the size of the H100 calibration figures
constexpr int kRaceSize[2] = {100, 70};
constexpr double kMaxConflictsPerRequest = 0.5;  // 31 unpadded; a few hundredths padded
// Without counters: the padded kernel must beat the unpadded reference by this much.
constexpr double kMaxTimeOfUnpadded = 0.85;

// What Nsight Compute counts for the bank-conflict test: conflicts and requests, loads and stores.
const std::string kLoadConflicts = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum";
const std::string kStoreConflicts = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum";
const std::string kLoadRequests = "smsp__inst_executed_op_shared_ld.sum";
const std::string kStoreRequests = "smsp__inst_executed_op_shared_st.sum";
const std::vector<std::string> kCounters = {kLoadConflicts, kStoreConflicts, kLoadRequests, kStoreRequests};

// What compute-sanitizer's memcheck and synccheck watch: both kernels on small awkward shapes.
std::vector<Call> small_sizes()
{
    std::vector<Call> calls = transpose::small_sizes(launch_transpose_unpadded, "launch_transpose_unpadded");
    for (Call& call : transpose::small_sizes(launch_transpose_padded, "launch_transpose_padded")) calls.push_back(call);
    return calls;
}

}  // namespace

//! [probe]
WORKBOOK_PROBE("padded 4096") { run_calls({padded(kProfiledSize, kProfiledSize)}); }
//! [probe]
// ncu takes a few seconds: it starts with the checker, beside the correctness tests.
//! [counters early]
const bool counted_early = read_counters_early("padded 4096", "transpose", kCounters);
//! [counters early]
WORKBOOK_PROBE("padded 100x70", "racecheck") { run_calls({padded(kRaceSize[0], kRaceSize[1])}); }
WORKBOOK_PROBE("small sizes", "memcheck", "synccheck") { run_calls(small_sizes()); }

// Step 1: the unpadded tile.
TEST_CASE("step 1 (unpadded): 1 x 1" * points(1)) { check_unpadded(1, 1); }
TEST_CASE("step 1 (unpadded): 31 x 33" * points(1)) { check_unpadded(31, 33); }
TEST_CASE("step 1 (unpadded): 33 x 31" * points(1)) { check_unpadded(33, 31); }
TEST_CASE("step 1 (unpadded): 1025 x 2049" * points(1)) { check_unpadded(1025, 2049); }
TEST_CASE("step 1 (unpadded): 2000 x 5000" * points(1)) { check_unpadded(2000, 5000); }

// Step 2: the padded tile.
TEST_CASE("step 2 (padded): 1 x 1" * points(1)) { check_padded(1, 1); }
TEST_CASE("step 2 (padded): 1 x 5000 (one row)" * points(1)) { check_padded(1, 5000); }
TEST_CASE("step 2 (padded): 5000 x 1 (one column)" * points(1)) { check_padded(5000, 1); }
TEST_CASE("step 2 (padded): 31 x 33" * points(1)) { check_padded(31, 33); }
TEST_CASE("step 2 (padded): 33 x 31" * points(1)) { check_padded(33, 31); }
TEST_CASE("step 2 (padded): 1000 x 1" * points(1)) { check_padded(1000, 1); }
TEST_CASE("step 2 (padded): 1025 x 2049" * points(1)) { check_padded(1025, 2049); }
TEST_CASE("step 2 (padded): 2000 x 5000 (the source post's size)" * points(1)) { check_padded(2000, 5000); }
TEST_CASE("step 2 (padded): 8192 x 8192" * points(2)) { check_padded(8192, 8192); }

TEST_CASE("performance: padded bandwidth against the reference at 8192 x 8192" * points(3))
{
    transpose::check_bandwidth(launch_transpose_padded, reference::launch_transpose_padded,
                               "launch_transpose_padded", 8192, 8192);
}

TEST_CASE("padding removes the bank conflicts (4096 x 4096)" * points(3))
{
    //! [counters]
    if (!require_correct(padded(kProfiledSize, kProfiledSize), "the bank conflicts")) return;
    const CounterReading counters = read_counters("padded 4096", "transpose", kCounters);
    //! [counters]
    if (counters.available) {
        const auto& v = counters.values;
        const double requests = v.at(kLoadRequests) + v.at(kStoreRequests);
        const double per_request = (v.at(kLoadConflicts) + v.at(kStoreConflicts)) / (requests > 0 ? requests : 1);
        MESSAGE("measured with Nsight Compute's counters: " << v.at(kLoadConflicts) << " load and "
                << v.at(kStoreConflicts) << " store bank conflicts over " << requests
                << " shared-memory requests = " << per_request << " per request (at most "
                << kMaxConflictsPerRequest << " passes)");
        if (per_request > kMaxConflictsPerRequest)
            FAIL_CHECK("launch_transpose_padded still has " << per_request << " bank conflicts per "
                       "shared-memory request.\nHint: reading a column of a 32-float-wide tile hits "
                       "one bank 32 times. Give each tile row one spare float (kTilePadding = 1).");
        return;
    }
    // No counters here: the padded kernel must clearly beat the reference's unpadded one.
    MESSAGE("measured with timing against the reference's unpadded kernel, because the counters "
            "cannot be read here: " << counters.why_not);
    const transpose::Case t(kProfiledSize, kProfiledSize);
    DeviceBuffer<float> out(t.in.size());
    const Timing yours = time_gpu([&] { launch_transpose_padded(t.device_in.data(), out.data(), kProfiledSize, kProfiledSize); });
    const Timing theirs = time_gpu([&] { reference::launch_transpose_unpadded(t.device_in.data(), out.data(), kProfiledSize, kProfiledSize); });
    const double ratio = yours.seconds() / theirs.seconds();
    MESSAGE("your padded kernel: " << yours.describe() << "; reference unpadded: " << theirs.describe()
            << "; ratio " << ratio << " (at most " << kMaxTimeOfUnpadded << " passes)");
    if (ratio > kMaxTimeOfUnpadded)
        FAIL_CHECK("launch_transpose_padded is no faster than an unpadded tile.\nHint: give each "
                   "tile row one spare float (kTilePadding = 1), so a tile column spreads over all 32 banks.");
}

TEST_CASE("no shared-memory race: compute-sanitizer racecheck (100 x 70)" * points(2))
{
    //! [racecheck]
    sanitizer_test("racecheck", "padded 100x70", {padded(kRaceSize[0], kRaceSize[1])},
                   "threads read tile elements that other threads load; put __syncthreads() "
                   "between the load and the transposed read.");
    //! [racecheck]
}

TEST_CASE("compute-sanitizer memcheck: small sizes" * points(1))
{
    sanitizer_test("memcheck", "small sizes", small_sizes(),
                   "an access out of bounds is a missing guard on the load (row < rows, col < cols) "
                   "or on the write (out_row < cols, out_col < rows).");
}

TEST_CASE("compute-sanitizer synccheck: small sizes" * points(1))
{
    sanitizer_test("synccheck", "small sizes", small_sizes(),
                   "every thread of the block must reach the same __syncthreads(): never put it "
                   "inside an if that some threads skip, or after an early return.");
}
