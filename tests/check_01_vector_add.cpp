// Checker for lab 01, vector add.
//
// Correctness on sizes that are not multiples of any block (1, 31, 32, 33, 1000, 1023, 1025 and
// just over 2^26), on seeded random data, with the output poisoned before each run and guard
// zones around it; then the host round trip; then the kernel's bandwidth beside the reference
// solution's, timed in the same process.
#include "common/workbook.hpp"

#include "01_vector_add.hpp"
namespace reference {
#include "01_vector_add.hpp"
}

#include <string>
#include <vector>

using namespace workbook;

namespace {

constexpr int kLargeN = (1 << 26) + 1;  // just over 64 Mi elements, 256 MiB per vector

// The student's kernel may take up to 1.25x the reference's time before losing the points.
constexpr double kSpeedFloor = 0.8;

const Tolerance kSumTolerance{0, 0x1p-23, "a + b in float is one rounding: within one unit in the last place"};

struct VectorCase {
    std::vector<float> a, b;
    std::vector<double> c;  // the float64 reference
};

//! [inputs]
VectorCase make_case(int n)
{
    VectorCase v;
    v.a = random_floats(n, seed_for("a, n=" + std::to_string(n)));
    v.b = random_floats(n, seed_for("b, n=" + std::to_string(n)));
    v.c.resize(n);
    for (int i = 0; i < n; ++i) v.c[i] = static_cast<double>(v.a[i]) + v.b[i];
    return v;
}
//! [inputs]

// What the pattern of failures suggests, in the words of the lab's TODOs.
std::string diagnose(const Comparison& result, const GuardReport& guards, int n)
{
    if (guards.after > 0)
        return "Threads past the end of the vector wrote to memory: only a thread with i < n may "
               "write c[i]. Is the bounds test there, and is it `i < n` (not `i <= n`)?";
    if (guards.before > 0) return "Something wrote before c[0]: can your index i be negative?";
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

//! [guarded]
// Runs the student's launch_vector_add on guarded, poisoned output, twice (so a result left
// over from the first run cannot pass the second), and fails with a diagnosis.
void check_kernel(int n)
{
    //! [have function]
    REQUIRE_STUDENT_FUNCTION(launch_vector_add);
    //! [have function]
    const VectorCase v = make_case(n);
    //! [buffers]
    const DeviceBuffer<float> a(v.a), b(v.b);
    GuardedOutput<float> c(n);
    //! [buffers]
    for (int run = 1; run <= 2; ++run) {
        c.poison();
        launch_vector_add(a.data(), b.data(), c.data(), n);
        CUDA_CHECK_LAUNCH("launch_vector_add");
        //! [compare]
        const Comparison result = compare("c", c.download(), v.c, Shape::vector(n), kSumTolerance);
        const GuardReport guards = c.check_guards();
        if (!result.ok() || !guards.intact()) {
            FAIL_CHECK("run " << run << " of 2, n = " << n << ":\n"
                              << (guards.intact() ? "" : "  " + guards.describe("c", n) + "\n")
                              << result.report() << "Hint: " << diagnose(result, guards, n));
            return;
        }
        //! [compare]
    }
}
//! [guarded]

// The host round trip: poisoned host output, then the same comparison.
void check_round_trip(int n)
{
    REQUIRE_STUDENT_FUNCTION(vector_add_from_host);
    const VectorCase v = make_case(n);
    std::vector<float> c(n);
    poison_host(c);
    vector_add_from_host(v.a.data(), v.b.data(), c.data(), n);
    const Comparison result = compare("c", c, v.c, Shape::vector(n), kSumTolerance);
    if (result.ok()) return;
    std::string hint;
    if (result.unwritten == static_cast<std::size_t>(n))
        hint = "c still holds the poison it had before the call: did you copy the result back with "
               "cudaMemcpy(c, device_c, bytes, cudaMemcpyDeviceToHost)?";
    else if (result.unwritten > 0)
        hint = "part of c was never filled: does every cudaMemcpy copy n * sizeof(float) bytes?";
    else
        hint = "wrong values: did you copy both a and b to the device before the launch, and pass "
               "the device arrays (not the host ones) to launch_vector_add?";
    FAIL_CHECK("vector_add_from_host, n = " << n << ":\n" << result.report() << "Hint: " << hint);
}

std::size_t free_device_bytes()
{
    std::size_t free = 0, total = 0;
    CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return free;
}

// The kernel's output at n = 1000 holds no poison: the sanitizer test's precondition.
bool writes_everything()
{
    const VectorCase v = make_case(1000);
    const DeviceBuffer<float> a(v.a), b(v.b);
    GuardedOutput<float> c(1000);
    launch_vector_add(a.data(), b.data(), c.data(), 1000);
    CUDA_CHECK_LAUNCH("launch_vector_add");
    return count_poison(c.download().data(), 1000) == 0;
}

}  // namespace

// What compute-sanitizer watches: the kernel at a few sizes, and the host round trip.
WORKBOOK_PROBE("small sizes")
{
    for (int n : {1, 33, 1000}) {
        const VectorCase v = make_case(n);
        const DeviceBuffer<float> a(v.a), b(v.b);
        DeviceBuffer<float> c(n);
        launch_vector_add(a.data(), b.data(), c.data(), n);
        CUDA_CHECK_LAUNCH("launch_vector_add");
    }
    const VectorCase v = make_case(1025);
    std::vector<float> c(1025);
    vector_add_from_host(v.a.data(), v.b.data(), c.data(), 1025);
}

//! [graded test]
TEST_CASE("kernel: n = 1" * points(1)) { check_kernel(1); }
//! [graded test]
TEST_CASE("kernel: n = 31 (less than one warp)" * points(1)) { check_kernel(31); }
TEST_CASE("kernel: n = 32 (exactly one warp)" * points(1)) { check_kernel(32); }
TEST_CASE("kernel: n = 33 (one past a warp)" * points(1)) { check_kernel(33); }
TEST_CASE("kernel: n = 1000" * points(1)) { check_kernel(1000); }
TEST_CASE("kernel: n = 1023" * points(1)) { check_kernel(1023); }
TEST_CASE("kernel: n = 1025 (one past 1024)" * points(1)) { check_kernel(1025); }
TEST_CASE("kernel: n = 2^26 + 1" * points(2)) { check_kernel(kLargeN); }

TEST_CASE("round trip from host: n = 1" * points(1)) { check_round_trip(1); }
TEST_CASE("round trip from host: n = 100003" * points(1)) { check_round_trip(100003); }

TEST_CASE("round trip from host: frees what it allocates" * points(1))
{
    REQUIRE_STUDENT_FUNCTION(vector_add_from_host);
    const int n = 1 << 22;  // 16 MiB per vector, far above the allocator's granularity
    check_round_trip(n);    // the first call also pays for one-time set-up
    const std::size_t before = free_device_bytes();
    check_round_trip(n);
    const std::size_t after = free_device_bytes();
    const double leaked_mib = (static_cast<double>(before) - static_cast<double>(after)) / (1 << 20);
    if (leaked_mib > 8)
        FAIL_CHECK("one call of vector_add_from_host left " << leaked_mib
                   << " MiB of device memory allocated.\nHint: cudaFree every array you cudaMalloc.");
}

TEST_CASE("compute-sanitizer memcheck: small sizes" * points(1))
{
    REQUIRE_STUDENT_FUNCTION(launch_vector_add);
    REQUIRE_STUDENT_FUNCTION(vector_add_from_host);
    if (!writes_everything()) {
        FAIL_CHECK("not checked: launch_vector_add leaves elements of c unwritten at n = 1000. "
                   "Make the kernel tests pass first.");
        return;
    }
    //! [memcheck]
    sanitizer_test("memcheck", "small sizes",
                   "an access out of bounds is a missing or wrong bounds test (i < n); the report "
                   "names the kernel, the source line and the thread.");
    //! [memcheck]
}

TEST_CASE("performance: bandwidth against the reference at n = 2^26 + 1" * points(3))
{
    REQUIRE_STUDENT_FUNCTION(launch_vector_add);
    const int n = kLargeN;
    const VectorCase v = make_case(n);
    const DeviceBuffer<float> a(v.a), b(v.b);
    GuardedOutput<float> c(n);
    launch_vector_add(a.data(), b.data(), c.data(), n);
    CUDA_CHECK_LAUNCH("launch_vector_add");
    const Comparison result = compare("c", c.download(), v.c, Shape::vector(n), kSumTolerance);
    if (!result.ok() || !c.check_guards().intact()) {
        FAIL_CHECK("not timed: the kernel's results are wrong at n = " << n
                   << ". Make the correctness tests pass first.\n" << result.report());
        return;
    }
    //! [timing]
    const Timing yours = time_gpu([&] { launch_vector_add(a.data(), b.data(), c.data(), n); });
    const Timing theirs = time_gpu([&] { reference::launch_vector_add(a.data(), b.data(), c.data(), n); });
    //! [timing]
    //! [versus]
    const double bytes = 3.0 * n * sizeof(float);  // read a and b, write c
    MESSAGE("your kernel: " << versus_copy(yours.giga_per_second(bytes)) << ", " << yours.describe());
    MESSAGE("reference:   " << versus_copy(theirs.giga_per_second(bytes)) << ", " << theirs.describe());
    //! [versus]
    const double speed = theirs.seconds() / yours.seconds();
    if (speed < kSpeedFloor)
        FAIL_CHECK("your kernel takes " << 1 / speed << "x the reference's time (at most "
                   << 1 / kSpeedFloor << "x earns these points).\nHint: one element per thread, "
                   "128 to 512 threads per block, and consecutive threads on consecutive elements "
                   "(so each warp reads one contiguous piece of memory).");
}
