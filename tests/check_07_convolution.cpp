// Checker for lab 07, 2-D convolution.
//
// Correctness of both steps (the direct kernel, then the tiled one) on images from 1 x 1 to
// 8192 x 8192, each with every odd mask from 1 x 1 to 15 x 15 (at 8192 x 8192: k = 1, 7 and 15),
// against a float64 reference with a tolerance derived from k; the effective bandwidth of both at
// 8192 x 8192 beside the reference solution's; compute-sanitizer's racecheck of the tiled kernel;
// and the optional strided kernel (bonus points).
#include "convolution_cases.hpp"

#include "07_convolution.hpp"
// The reference solution's functions, with the types of yours: its object is linked beside yours
// with every name moved into namespace reference (grading/buildtools/reference_object.py).
namespace reference {
decltype(::launch_convolution_direct) launch_convolution_direct;
decltype(::launch_convolution_tiled) launch_convolution_tiled;
decltype(::set_mask) set_mask;
}  // namespace reference

#include <cstdio>
#include <string>

using namespace workbook;

namespace {

convolution::Kernel direct()
{
    return {launch_convolution_direct, set_mask, "launch_convolution_direct", 0, 0, 1, WORKBOOK_ADDRESS(launch_convolution_direct)};
}
convolution::Kernel tiled()
{
    return {launch_convolution_tiled, set_mask, "launch_convolution_tiled", 32, 8, 1, WORKBOOK_ADDRESS(launch_convolution_tiled)};
}

convolution::Kernel strided(int stride)
{
    convolution::Kernel kernel;
    kernel.launch = [stride](const float* in, float* out, int height, int width, int k) {
            launch_convolution_strided(in, out, height, width, k, stride);
        };
    kernel.set_mask = set_mask;
    kernel.function = "launch_convolution_strided";
    kernel.stride = stride;
    kernel.address = WORKBOOK_ADDRESS(launch_convolution_strided);
    return kernel;
}

convolution::Kernel reference_direct()
{
    return {reference::launch_convolution_direct, reference::set_mask, "reference direct kernel", 0, 0, 1,
            WORKBOOK_ADDRESS(reference::launch_convolution_direct)};
}
convolution::Kernel reference_tiled()
{
    return {reference::launch_convolution_tiled, reference::set_mask, "reference tiled kernel", 32, 8, 1,
            WORKBOOK_ADDRESS(reference::launch_convolution_tiled)};
}

constexpr int kRaceSize[2] = {100, 70};
constexpr int kRaceK = 7;
std::vector<Call> race_case() { return convolution::small_calls(tiled(), {{kRaceSize[0], kRaceSize[1], kRaceK}}); }

// What memcheck and synccheck watch: both kernels on small awkward images with small and large masks.
std::vector<Call> small_sizes()
{
    std::vector<Call> calls;
    for (const auto& kernel : {direct(), tiled()})
        for (const Call& call : convolution::small_calls(kernel, {{17, 31, 3}, {17, 31, 15}, {33, 9, 3}, {33, 9, 15}}))
            calls.push_back(call);
    return calls;
}

}  // namespace

WORKBOOK_PROBE("tiled 100x70", "racecheck") { run_calls(race_case()); }
WORKBOOK_PROBE("small sizes", "memcheck", "synccheck") { run_calls(small_sizes()); }

// The comparison the walkthrough discusses: the reference tiled kernel against the reference
// direct one at 8192 x 8192, k = 3, 5 and 7. It prints and never fails:
//   build/bin/check_07_convolution_solution --workbook-probe="tiled against direct"
WORKBOOK_PROBE("tiled against direct")
{
    const int s = convolution::kTimedSize;
    const std::vector<float> image = convolution::make_image(s, s);
    const DeviceBuffer<float> in(image);
    DeviceBuffer<float> out(image.size());
    const double bytes = 2.0 * s * s * sizeof(float);
    std::printf("%s\n", device_facts().describe().c_str());
    for (int k : {3, 5, 7}) {
        const std::vector<float> mask = convolution::make_mask(k);
        reference::set_mask(mask.data(), k);
        const Timing t = time_gpu([&] { reference::launch_convolution_tiled(in.data(), out.data(), s, s, k); });
        const Timing d = time_gpu([&] { reference::launch_convolution_direct(in.data(), out.data(), s, s, k); });
        std::printf("8192 x 8192, k = %d: tiled %s, %.0f Mpixel/s, %s\n", k,
                    versus_copy(t.giga_per_second(bytes)).c_str(), convolution::megapixels(s, s, t), t.describe().c_str());
        std::printf("8192 x 8192, k = %d: direct %s, %.0f Mpixel/s, %s\n", k,
                    versus_copy(d.giga_per_second(bytes)).c_str(), convolution::megapixels(s, s, d), d.describe().c_str());
        std::printf("8192 x 8192, k = %d: the tiled kernel takes %.2fx the direct kernel's time\n", k,
                    t.seconds() / d.seconds());
    }
}

// Step 1: the direct kernel. Each test runs k = 1, 3, 5, ..., 15 on one image.
TEST_CASE("step 1 (direct): 1 x 1" * points(1)) { convolution::check(direct(), 1, 1); }
TEST_CASE("step 1 (direct): 1 x 5000 (one row)" * points(1)) { convolution::check(direct(), 1, 5000); }
TEST_CASE("step 1 (direct): 5000 x 1 (one column)" * points(1)) { convolution::check(direct(), 5000, 1); }
TEST_CASE("step 1 (direct): 17 x 31" * points(1)) { convolution::check(direct(), 17, 31); }
TEST_CASE("step 1 (direct): 1000 x 1000" * points(1)) { convolution::check(direct(), 1000, 1000); }
TEST_CASE("step 1 (direct): 2000 x 5000 (the source post's size)" * points(1)) { convolution::check(direct(), 2000, 5000); }
TEST_CASE("step 1 (direct): 8192 x 8192" * points(2)) { convolution::check(direct(), 8192, 8192); }

// Step 2: the tiled kernel.
TEST_CASE("step 2 (tiled): 1 x 1" * points(1)) { convolution::check(tiled(), 1, 1); }
TEST_CASE("step 2 (tiled): 1 x 5000 (one row)" * points(1)) { convolution::check(tiled(), 1, 5000); }
TEST_CASE("step 2 (tiled): 5000 x 1 (one column)" * points(1)) { convolution::check(tiled(), 5000, 1); }
TEST_CASE("step 2 (tiled): 17 x 31" * points(1)) { convolution::check(tiled(), 17, 31); }
TEST_CASE("step 2 (tiled): 1000 x 1000" * points(1)) { convolution::check(tiled(), 1000, 1000); }
TEST_CASE("step 2 (tiled): 2000 x 5000 (the source post's size)" * points(1)) { convolution::check(tiled(), 2000, 5000); }
TEST_CASE("step 2 (tiled): 8192 x 8192" * points(2)) { convolution::check(tiled(), 8192, 8192); }

TEST_CASE("performance: direct bandwidth against the reference at 8192 x 8192" * points(2))
{
    convolution::check_bandwidth(direct(), reference_direct());
}

TEST_CASE("performance: tiled bandwidth against the reference at 8192 x 8192" * points(3))
{
    convolution::check_bandwidth(tiled(), reference_tiled());
}

TEST_CASE("no shared-memory race: compute-sanitizer racecheck (100 x 70)" * points(2))
{
    //! [racecheck]
    sanitizer_test("racecheck", "tiled 100x70", race_case(),
                   "threads read tile cells that other threads load; put __syncthreads() between "
                   "loading the tile and computing from it, where every thread of the block reaches it.");
    //! [racecheck]
}

TEST_CASE("compute-sanitizer memcheck: small sizes" * points(1))
{
    sanitizer_test("memcheck", "small sizes", small_sizes(),
                   "an access out of bounds is an input read without its test (inside the image, "
                   "else 0) or an output written past the last row or column.");
}

TEST_CASE("compute-sanitizer synccheck: small sizes" * points(1))
{
    sanitizer_test("synccheck", "small sizes", small_sizes(),
                   "every thread of the block must reach the __syncthreads() after the tile load: "
                   "never inside an if, never after an early return.");
}

// Optional: the strided kernel (bonus points).
TEST_CASE("optional, stride 1: 17 x 31 (the same as step 1)" * bonus(1)) { convolution::check(strided(1), 17, 31); }
TEST_CASE("optional, stride 2: 17 x 31" * bonus(1)) { convolution::check(strided(2), 17, 31); }
TEST_CASE("optional, stride 3: 1000 x 1000" * bonus(1)) { convolution::check(strided(3), 1000, 1000); }
TEST_CASE("optional, stride 2: 2000 x 5000 (the source post's size)" * bonus(1)) { convolution::check(strided(2), 2000, 5000); }
