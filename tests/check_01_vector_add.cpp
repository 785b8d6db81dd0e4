// Checker for lab 01, vector add.
//
// Correctness on sizes that are not multiples of any block (1, 31, 32, 33, 1000, 1023, 1025 and
// just over 2^26), on seeded random data; then the host round trip; then the kernel's bandwidth
// beside the reference solution's. The lab states only its data (the calls below); the judge
// (common/judge.hpp) poisons, runs, records, compares, repeats and times every one of them.
#include "grading/judge/checker.hpp"

#include "01_vector_add.hpp"
// The reference solution's functions, with the types of yours: its object is linked beside yours
// with every name moved into namespace reference (grading/buildtools/reference_object.py).
namespace reference {
decltype(::launch_vector_add) launch_vector_add;
}  // namespace reference

#include <algorithm>
#include <iomanip>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace workbook;

namespace {

constexpr int kLargeN = (1 << 26) + 1;  // just over 64 Mi elements, 256 MiB per vector

const Tolerance kSumTolerance{0, 0x1p-23, "a + b in float is one rounding: within one unit in the last place"};

//! [inputs]
// One case: random a and b, the float64 sum, and a and b on the device.
struct Inputs {
    explicit Inputs(int n)
        : n(n),
          a(random_floats(n, seed_for("a, n=" + std::to_string(n)))),
          b(random_floats(n, seed_for("b, n=" + std::to_string(n)))),
          device_a(a),
          device_b(b),
          c(sum_reference(a, b))
    {
    }
    int n;
    std::vector<float> a, b;
    DeviceBuffer<float> device_a, device_b;
    Reference c;  // the float64 sum
};
//! [inputs]

// What the pattern of failures suggests, in the words of the lab's TODOs.
std::string diagnose(const Failure& f, int n)
{
    const Comparison& result = f.comparison;
    if (f.guards.after > 0)
        return "Threads past the end of the vector wrote to memory: only a thread with i < n may "
               "write c[i]. Is the bounds test there, and is it `i < n` (not `i <= n`)?";
    if (f.guards.before > 0) return "Something wrote before c[0]: can your index i be negative?";
    if (result.unwritten == static_cast<std::size_t>(n))
        return "No element of c was written. Does the kernel compute i and write c[i], and does "
               "launch_vector_add launch it?";
    const bool tail_only = result.bad_run_count == 1 && result.last_bad == static_cast<std::size_t>(n) - 1 &&
                           result.wrong == 0;
    // One missing last element fits two bugs: a grid one block short (n = 1025 with blocks of
    // 256 leaves only c[1024]) and a bounds test that stops one short. Name both.
    if (tail_only && result.unwritten == 1)
        return result.element(n - 1) + " was never written: does your grid cover all n elements "
               "(round the number of blocks up), and is the bounds test `i < n`?";
    if (tail_only)
        return result.element(result.first_bad) + " onwards was never written: does your grid cover "
               "all n elements? Round the number of blocks up: (n + threads_per_block - 1) / threads_per_block.";
    if (result.unwritten > 0)
        return "Some elements were never written: is i = blockIdx.x * blockDim.x + threadIdx.x, so "
               "that every element gets exactly one thread?";
    return "Wrong values: does each thread read a[i] and b[i] at the same i it writes?";
}

std::string diagnose_round_trip(const Failure& f, int n)
{
    if (f.comparison.unwritten == static_cast<std::size_t>(n))
        return "c still holds the poison it had before the call: did you copy the result back with "
               "cudaMemcpy(c, device_c, bytes, cudaMemcpyDeviceToHost)?";
    if (f.comparison.unwritten > 0) return "part of c was never filled: does every cudaMemcpy copy n * sizeof(float) bytes?";
    return "wrong values: did you copy both a and b to the device before the launch, and pass the "
           "device arrays (not the host ones) to launch_vector_add?";
}

//! [call]
// launch_vector_add on device arrays: what the judge runs, and what it compares with.
Call kernel_call(const std::shared_ptr<const Inputs>& in)
{
    Call call;
    call.function = "launch_vector_add";
    call.address = WORKBOOK_ADDRESS(launch_vector_add);
    call.what = "n = " + std::to_string(in->n);
    call.output = "c";
    call.shape = Shape::vector(in->n);
    call.tolerance = kSumTolerance;
    call.expected = [in]() -> const Reference& { return in->c; };
    call.run = [in](float* c) { launch_vector_add(in->device_a.data(), in->device_b.data(), c, in->n); };
    call.inputs = {{in->device_a.data(), in->device_a.size(), "a"}, {in->device_b.data(), in->device_b.size(), "b"}};
    call.diagnose = [n = in->n](const Failure& f) { return diagnose(f, n); };
    return call;
}
//! [call]

Call kernel_call(int n) { return kernel_call(cached_case<Inputs>(n, n)); }

// vector_add_from_host on host arrays: c must come back from the GPU, n floats of it.
Call round_trip_call(int n)
{
    const auto in = std::make_shared<const Inputs>(n);
    Call call = kernel_call(in);
    call.function = "vector_add_from_host";
    call.address = WORKBOOK_ADDRESS(vector_add_from_host);
    call.host_output = true;
    call.copies_back_bytes = static_cast<std::size_t>(n) * sizeof(float);
    call.run = [in](float* c) { vector_add_from_host(in->a.data(), in->b.data(), c, in->n); };
    call.diagnose = [n](const Failure& f) { return diagnose_round_trip(f, n); };
    return call;
}

//! [runner memory]
// The device memory your code holds: NVML's figure for the process that runs it, which no
// other process on this GPU moves; and the GPU's used memory as a whole (cudaMemGetInfo), which
// counts only where NVML has no figure, and which every process on the GPU moves.
struct DeviceMemory {
    std::optional<std::size_t> runner;  // NVML's, for the runner's processes
    std::size_t device_used = 0;        // the whole GPU's
    std::string why_not;                // why NVML gave no figure
};

DeviceMemory device_memory()
{
    DeviceMemory memory;
    memory.runner = runner_device_bytes(&memory.why_not);
    std::size_t free = 0, total = 0;
    CUDA_CHECK(cudaMemGetInfo(&free, &total));
    memory.device_used = total - free;
    return memory;
}
//! [runner memory]

// What compute-sanitizer watches: the kernel at a few sizes, and the host round trip.
std::vector<Call> small_sizes() { return {kernel_call(1), kernel_call(33), kernel_call(1000), round_trip_call(1025)}; }

}  // namespace

//! [probe]
WORKBOOK_PROBE("small sizes", "memcheck") { run_calls(small_sizes()); }
//! [probe]

//! [graded test]
TEST_CASE("kernel: n = 1" * points(1)) { check(kernel_call(1)); }
//! [graded test]
TEST_CASE("kernel: n = 31 (less than one warp)" * points(1)) { check(kernel_call(31)); }
TEST_CASE("kernel: n = 32 (exactly one warp)" * points(1)) { check(kernel_call(32)); }
TEST_CASE("kernel: n = 33 (one past a warp)" * points(1)) { check(kernel_call(33)); }
TEST_CASE("kernel: n = 1000" * points(1)) { check(kernel_call(1000)); }
TEST_CASE("kernel: n = 1023" * points(1)) { check(kernel_call(1023)); }
TEST_CASE("kernel: n = 1025 (one past 1024)" * points(1)) { check(kernel_call(1025)); }
TEST_CASE("kernel: n = 2^26 + 1" * points(2)) { check(kernel_call(kLargeN)); }

TEST_CASE("round trip from host: n = 1" * points(1)) { check(round_trip_call(1)); }
TEST_CASE("round trip from host: n = 100003" * points(1)) { check(round_trip_call(100003)); }

TEST_CASE("round trip from host: frees what it allocates" * points(1))
{
    const int n = 1 << 22;  // 16 MiB per vector, far above the allocator's granularity
    const Call call = round_trip_call(n);
    if (!check(call)) return;  // the first call also pays for one-time set-up
    const DeviceMemory before = device_memory();
    if (!check(call)) return;
    const DeviceMemory after = device_memory();
    // Another process on the GPU (another lab's tool run, another student's grading) moves the
    // GPU's free memory by hundreds of MiB: the runner's own figure counts wherever NVML has one.
    const bool own = before.runner && after.runner;
    const double grown = own ? static_cast<double>(*after.runner) - static_cast<double>(*before.runner)
                             : static_cast<double>(after.device_used) - static_cast<double>(before.device_used);
    // The judge ran the round trip kJudgeRuns times between the two readings.
    const double leaked_mib = grown / (1 << 20) / kJudgeRuns;
    std::ostringstream mib;
    mib << std::fixed << std::setprecision(1) << std::max(0.0, leaked_mib) << " MiB";
    const std::string figure =
        own ? "by NVML's figure for the process that runs your code"
            : "by the GPU's free memory, which other processes on this GPU change too (NVML's figure for "
              "the process that runs your code was not available: " + (before.runner ? after.why_not : before.why_not) + ")";
    if (leaked_mib > 8)
        FAIL_CHECK("one call of vector_add_from_host left " << mib.str() << " of device memory allocated, " << figure
                   << ".\nHint: cudaFree every array you cudaMalloc.");
    else
        MESSAGE("device memory left allocated per call: " << mib.str() << ", " << figure);
}

TEST_CASE("compute-sanitizer memcheck: small sizes" * points(1))
{
    //! [memcheck]
    sanitizer_test("memcheck", "small sizes", small_sizes(),
                   "an access out of bounds is a missing or wrong bounds test (i < n); the report "
                   "names the kernel, the source line and the thread.");
    //! [memcheck]
}

TEST_CASE("performance: bandwidth against the reference at n = 2^26 + 1" * points(3))
{
    const auto in = cached_case<Inputs>(kLargeN, kLargeN);  // the correctness test's, when it ran
    //! [speed]
    const double bytes = 3.0 * kLargeN * sizeof(float);  // read a and b, write c
    check_speed(kernel_call(in),
                [&](float* c) { reference::launch_vector_add(in->device_a.data(), in->device_b.data(), c, in->n); },
                {bytes, Ceiling::copy});
    //! [speed]
}
