// Unit tests of common/ that need no GPU: comparison, poison and guard logic on host buffers,
// statistics, seeds, error checks and the host references. The grader's formats are tested by
// grading/tests/test_grading.cpp, its reports by grading/tests/test_grader.py.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "common/buffers.hpp"
#include "common/check.hpp"
#include "common/compare.hpp"
#include "common/random.hpp"
#include "common/stats.hpp"
#include "common/timing.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>
#include <vector>

using namespace workbook;

TEST_CASE("poison: a poisoned float is a NaN that no result can equal")
{
    //! [poison]
    std::vector<float> out(4, 1.0f);
    poison_host(out);
    CHECK(std::isnan(out[0]));
    CHECK(is_poison(out[0]));
    //! [poison]
    CHECK_FALSE(is_poison(std::numeric_limits<float>::quiet_NaN()));  // a computed NaN is not poison
    CHECK_FALSE(is_poison(0.0f));
    CHECK(count_poison(out.data(), out.size()) == 4);
}

TEST_CASE("poison: integers get a sentinel that is not 0, -1 or a small number")
{
    std::vector<int> out(3, 7);
    poison_host(out);
    CHECK(is_poison(out[1]));
    CHECK(out[1] < -1000000);
    CHECK_FALSE(is_poison(-1));
    CHECK_FALSE(is_poison(0));
}

TEST_CASE("guards: untouched canaries are intact")
{
    std::vector<unsigned char> before(64, canary_byte), after(64, canary_byte);
    const GuardReport report = inspect_guards(before, after, sizeof(float), 100);
    CHECK(report.intact());
    CHECK(report.describe("c", 100).empty());
}

TEST_CASE("guards: a write past the end is found and numbered from the start of the output")
{
    std::vector<unsigned char> before(64, canary_byte), after(64, canary_byte);
    after[4 * 2] = 0;  // element 2 past the end: c[102] for a 100-element output
    after[4 * 5 + 3] = 0;
    //! [inspect guards]
    const GuardReport report = inspect_guards(before, after, sizeof(float), 100);
    //! [inspect guards]
    CHECK_FALSE(report.intact());
    CHECK(report.after == 2);
    CHECK(report.first_after == 102);
    CHECK(report.describe("c", 100).find("c[102]") != std::string::npos);
}

TEST_CASE("guards: a write before the start names its distance from element 0")
{
    std::vector<unsigned char> before(64, canary_byte), after(64, canary_byte);
    before[64 - 4] = 1;  // the element just before c[0]
    const GuardReport report = inspect_guards(before, after, sizeof(float), 10);
    CHECK(report.before == 1);
    CHECK(report.first_before == 1);
    CHECK(report.describe("c", 10).find("c[-1]") != std::string::npos);
}

TEST_CASE("compare: equal results pass and report the largest error")
{
    const std::vector<float> got{1.0f, 2.0f, 3.0f};
    const std::vector<double> want{1.0, 2.0, 3.0000001};
    const Comparison r = compare("c", got, want, Shape::vector(3), Tolerance{0, 1e-6, "test"});
    CHECK(r.ok());
    CHECK(r.max_error > 0);
    CHECK(r.report().find("all 3 elements match") != std::string::npos);
}

TEST_CASE("compare: the tolerance is abs + rel * |ref|, and its reason is printed")
{
    const Tolerance t{1e-3, 1e-2, "derived from k"};
    CHECK(t.accepts(100.5, 100.0));
    CHECK_FALSE(t.accepts(101.5, 100.0));
    CHECK(t.accepts(0.0009, 0.0));
    CHECK(t.describe().find("derived from k") != std::string::npos);
    CHECK(Tolerance::exact().accepts(3.0, 3.0));
    CHECK_FALSE(Tolerance::exact().accepts(3.0, 4.0));
}

TEST_CASE("compare: NaN and infinity never pass, whatever the tolerance, on either side")
{
    const Tolerance loose{1e30, 1e30, "as loose as can be"};
    CHECK_FALSE(loose.accepts(NAN, 1.0));
    CHECK_FALSE(loose.accepts(INFINITY, 1.0));
    CHECK_FALSE(loose.accepts(-INFINITY, 1.0));
    // An infinite reference would make the bound infinite and pass any finite value.
    CHECK_FALSE(loose.accepts(1.0, INFINITY));
    CHECK_FALSE(loose.accepts(INFINITY, INFINITY));
    CHECK_FALSE(loose.accepts(NAN, NAN));
    const std::vector<float> got{1.0f, INFINITY, 3.0f};
    const std::vector<double> want{1.0, 2.0, 3.0};
    CHECK_FALSE(compare("c", got, want, Shape::vector(3), loose).ok());
}

TEST_CASE("compare: an unwritten tail is told apart from wrong values, with its index range")
{
    std::vector<float> got(1025, 2.0f);
    std::vector<double> want(1025, 2.0);
    std::memset(&got[1024], 0xFF, sizeof(float));  // never written
    got[10] = 5.0f;                                 // wrong value
    const Comparison r = compare("c", got, want, Shape::vector(1025), Tolerance::exact());
    CHECK_FALSE(r.ok());
    CHECK(r.unwritten == 1);
    CHECK(r.wrong == 1);
    CHECK(r.first_bad == 10);
    CHECK(r.last_bad == 1024);
    CHECK(r.bad_run_count == 2);
    const std::string text = r.report();
    CHECK(text.find("c[1024]: expected 2, got nothing (never written)") != std::string::npos);
    CHECK(text.find("c[10]: expected 2, got 5") != std::string::npos);
    CHECK(text.find("failing indices: 10 1024") != std::string::npos);
}

TEST_CASE("compare: a computed NaN or infinity is a wrong value, never a pass")
{
    const std::vector<float> got{std::numeric_limits<float>::quiet_NaN(),
                                 std::numeric_limits<float>::infinity()};
    const std::vector<double> want{1.0, 1.0};
    const Comparison r = compare("c", got, want, Shape::vector(2), Tolerance{1, 1, "loose"});
    CHECK(r.wrong == 2);
    CHECK(r.unwritten == 0);
}

TEST_CASE("compare: integers compare exactly")
{
    const std::vector<int> got{1, 2, 3};
    const std::vector<double> want{1, 2, 4};
    const Comparison r = compare("out", got, want, Shape::vector(3), Tolerance::exact());
    CHECK(r.wrong == 1);
    CHECK(r.first_bad == 2);
}

TEST_CASE("compare: a matrix names elements by row and column and draws a map")
{
    // A 4 x 6 "transpose" whose writes swapped row and column: only the diagonal is right.
    const std::size_t rows = 6, cols = 6;
    std::vector<float> got(rows * cols);
    std::vector<double> want(rows * cols);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c) {
            want[r * cols + c] = static_cast<double>(r * 10 + c);
            got[r * cols + c] = static_cast<float>(c * 10 + r);
        }
    const Comparison result = compare("out", got, want, Shape::grid(rows, cols), Tolerance::exact());
    CHECK(result.wrong == rows * cols - rows);
    CHECK(result.element(7) == "out[1][1]");
    CHECK(result.element(8) == "out[1][2]");
    const std::string map = result.map();
    CHECK(map.find("|.XXXXX|") != std::string::npos);  // row 0: right on the diagonal only
    CHECK(map.find("|XX.XXX|") != std::string::npos);  // row 2
    CHECK(map.find("never written") != std::string::npos);  // the legend
}

TEST_CASE("compare: a large matrix's map aggregates cells and marks partial ones")
{
    const std::size_t rows = 100, cols = 200;
    std::vector<float> got(rows * cols, 1.0f);
    const std::vector<double> want(rows * cols, 1.0);
    for (std::size_t c = 0; c < cols; ++c) std::memset(&got[(rows - 1) * cols + c], 0xFF, 4);  // last row unwritten
    const Comparison r = compare("out", got, want, Shape::grid(rows, cols), Tolerance::exact());
    CHECK(r.unwritten == cols);
    const std::string map = r.map();
    CHECK(map.find(std::string(64, 'u')) != std::string::npos);  // the bottom band of cells
    CHECK(map.find(std::string(64, '.')) != std::string::npos);  // the rest is fine
}

TEST_CASE("compare: a map of an all-wrong matrix is all X, whatever its shape")
{
    for (const auto& dims : {std::pair<std::size_t, std::size_t>{17, 65}, {100, 70}, {5, 3}, {1, 1000}}) {
        const std::size_t rows = dims.first, cols = dims.second;
        const std::vector<float> got(rows * cols, 2.0f);
        const std::vector<double> want(rows * cols, 1.0);
        const Comparison r = compare("C", got, want, Shape::grid(rows, cols), Tolerance::exact());
        CAPTURE(rows);
        CAPTURE(cols);
        std::istringstream lines(r.map());
        std::string line;
        int map_rows = 0;
        while (std::getline(lines, line)) {
            if (line.rfind("    |", 0) != 0) continue;  // only the map's own rows
            ++map_rows;
            CHECK(line.find_first_not_of('X', 5) == line.size() - 1);  // X up to the closing '|'
        }
        CHECK(map_rows == static_cast<int>(std::min<std::size_t>(rows, 16)));
    }
}

TEST_CASE("stats: median, quartiles and spread")
{
    //! [summarize]
    const Summary s = summarize({5, 1, 4, 2, 3});
    CHECK(s.median == 3);
    CHECK(s.min == 1);
    CHECK(s.max == 5);
    CHECK(s.q1 == 2);
    CHECK(s.q3 == 4);
    CHECK(s.spread() == doctest::Approx(2.0 / 3.0));
    //! [summarize]
    CHECK(summarize({2, 4}).median == 3);
    CHECK(summarize({}).count == 0);
}

TEST_CASE("timing: a batch's fixed cost is shared among its runs, and said")
{
    Timing batched{summarize({0.25, 0.30, 0.35}), 10};
    const Timing less = batched.less_batch_cost(0.5);
    CHECK(less.ms_per_run() == doctest::Approx(0.20));  // the fastest batch, less 0.5 ms over 10 runs
    CHECK(less.ms.median == doctest::Approx(0.25));
    CHECK(less.describe().find("less a batch's fixed cost of 0.500 ms") != std::string::npos);
    CHECK(batched.describe().find("fixed cost") == std::string::npos);
    // Never below a microsecond a run, and an unbatched timing keeps its figures.
    CHECK(batched.less_batch_cost(100).ms_per_run() > 0);
    const Timing single{summarize({1.0, 2.0, 3.0}), 1};
    CHECK(single.less_batch_cost(0.5).ms_per_run() == doctest::Approx(2.0));
}

TEST_CASE("seeds: the default is fixed, WORKBOOK_SEED overrides it, labels separate streams")
{
    //! [seeds]
    const std::uint64_t seed = run_seed();  // WORKBOOK_SEED, or default_seed when unset
    const auto a = random_floats(5, seed_for("a, n=5"));
    const auto b = random_floats(5, seed_for("b, n=5"));
    //! [seeds]
    if (std::getenv("WORKBOOK_SEED") == nullptr) CHECK(seed == default_seed);
    CHECK(a == random_floats(5, seed_for("a, n=5")));  // reproducible
    CHECK(a != b);                                     // independent
}

TEST_CASE("random: values fill the requested range and are not constant")
{
    const auto v = random_floats(10000, 42, -1.0f, 1.0f);
    float lo = 1, hi = -1;
    for (float x : v) {
        lo = std::min(lo, x);
        hi = std::max(hi, x);
    }
    CHECK(lo >= -1.0f);
    CHECK(hi < 1.0f);
    CHECK(lo < -0.99f);
    CHECK(hi > 0.99f);
    //! [random ints]
    const auto ints = random_ints(10000, 42, -3, 3);
    //! [random ints]
    CHECK(*std::min_element(ints.begin(), ints.end()) == -3);
    CHECK(*std::max_element(ints.begin(), ints.end()) == 3);
}

TEST_CASE("random: a seed gives the same numbers on every machine")
{
    // Pinned values: a change here would silently change every lab's data.
    Rng rng(1);
    const std::uint64_t first = rng.next();
    CHECK(first == Rng(1).next());
    CHECK(random_ints(4, 7, 0, 1000000) == random_ints(4, 7, 0, 1000000));
}

TEST_CASE("errors: sticky errors are told apart and come with a hint")
{
    //! [errors]
    CHECK(is_sticky(cudaErrorIllegalAddress));       // the context is lost: a new process is needed
    CHECK_FALSE(is_sticky(cudaErrorInvalidValue));   // the process can go on
    CHECK(std::string(hint_for(cudaErrorInvalidConfiguration)).find("1024 threads") != std::string::npos);
    //! [errors]
    //! [throw]
    CHECK_THROWS_AS(throw_cuda_error(cudaErrorIllegalAddress, "kernel<<<...>>>", "lab.cu", 12), CudaError);
    CHECK(sticky_error_seen());  // the checker's listener stops after this test, so the grader restarts it
    //! [throw]
}

TEST_CASE("spot_check: a GPU reference must agree with the CPU at the corners and at random elements")
{
    const std::size_t rows = 37, cols = 53;
    std::vector<double> values(rows * cols);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.5 * static_cast<double>(i);
    //! [spot check]
    const auto exact = [&](std::size_t row, std::size_t col) { return std::make_pair(0.5 * (row * cols + col), 0.0); };
    spot_check(values, rows, cols, exact, "test");
    //! [spot check]
    // A wrong corner is always looked at; within the allowed difference it passes.
    values[rows * cols - 1] += 1e-9;
    CHECK_THROWS_AS(spot_check(values, rows, cols, exact, "test"), std::runtime_error);
    spot_check(values, rows, cols, [&](std::size_t row, std::size_t col) {
        return std::make_pair(0.5 * (row * cols + col), 1e-6);
    }, "test");
    values[rows * cols - 1] = NAN;
    CHECK_THROWS_AS(spot_check(values, rows, cols, [&](std::size_t row, std::size_t col) {
        return std::make_pair(0.5 * (row * cols + col), 1e-6);
    }, "test"), std::runtime_error);
    // A vector is one row: both ends are corners.
    std::vector<double> vector = {1, 2, 3};
    vector[0] = 7;
    CHECK_THROWS_AS(spot_check(vector, 1, 3, [](std::size_t, std::size_t i) { return std::make_pair(i + 1.0, 0.0); },
                               "test"),
                    std::runtime_error);
}

// The CPU path of the convolution reference (small cases never touch the GPU).
#include "common/convolution_reference.hpp"
#include "common/gemm_reference.hpp"

TEST_CASE("convolution reference: a correlation with zero padding, and its stride")
{
    //! [convolution]
    const std::vector<float> in = {1, 2, 3,
                                   4, 5, 6,
                                   7, 8, 9};
    // A single 1 at mask[0][2]: out[y][x] = in[y - 1][x + 1], 0 where that cell is outside.
    const std::vector<float> corner = {0, 0, 1,
                                       0, 0, 0,
                                       0, 0, 0};
    CHECK(convolution_reference(in, 3, 3, corner, 3).host() == std::vector<double>{0, 0, 0,
                                                                            2, 3, 0,
                                                                            5, 6, 0});
    // Stride 2: outputs centred on in[0][0], in[0][2], in[2][0], in[2][2].
    CHECK(convolution_reference(in, 3, 3, corner, 3, 2).host() == std::vector<double>{0, 0,
                                                                               5, 0});
    //! [convolution]
    // Not flipped: the centre sums mask[i][j] * in[i][j], 285; a flipped mask would give 165.
    const std::vector<float> mask = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    double magnitude = 0;
    CHECK(convolution_reference_at(in, 3, 3, mask, 3, 1, 1, 1, &magnitude) == 285);
    CHECK(magnitude == 285);
    CHECK(convolution_reference(in, 3, 3, mask, 3).host()[4] == 285);
    // A 1 x 1 mask scales; a mask wider than the image still sees only the image.
    CHECK(convolution_reference(in, 3, 3, {2}, 1).host() == std::vector<double>{2, 4, 6, 8, 10, 12, 14, 16, 18});
    const std::vector<float> ones(15 * 15, 1.0f);
    CHECK(convolution_reference(in, 3, 3, ones, 15).host() == std::vector<double>(9, 45));
    CHECK_THROWS_AS(convolution_reference(in, 3, 3, mask, 2), std::invalid_argument);
    CHECK_THROWS_AS(convolution_reference(in, 3, 4, mask, 3), std::invalid_argument);
}

#include "common/host.hpp"

#include <atomic>
#include <chrono>
#include <thread>

TEST_CASE("host: for_rows runs every row once, on one thread or many")
{
    for (int threads : {1, 3, 8}) {
        std::vector<std::atomic<int>> visits(1000);
        //! [for rows]
        for_rows(1000, threads, [&](int row) { ++visits[row]; });
        //! [for rows]
        int wrong = 0;
        for (auto& v : visits) wrong += v != 1;
        CHECK_MESSAGE(wrong == 0, threads << " threads: " << wrong << " rows not run exactly once");
    }
    CHECK(host_threads() >= 1);
}

TEST_CASE("host baselines: the matmul and convolution rows agree with the float64 references")
{
    const int m = 7, k = 13, n = 5;
    const std::vector<float> a = random_floats(m * k, 11), b = random_floats(k * n, 12);
    std::vector<float> c(m * n);
    //! [host baselines]
    for_rows(m, 2, [&](int i) { host_matmul_row(a.data(), b.data(), c.data(), k, n, i); });
    //! [host baselines]
    CHECK(compare("C", c, gemm_reference(a, b, m, k, n).host(), Shape::grid(m, n), gemm_tolerance(k)).ok());

    const int height = 9, width = 11, mask_k = 5;
    const std::vector<float> image = random_floats(height * width, 13), mask = random_floats(mask_k * mask_k, 14);
    std::vector<float> out(image.size());
    for (int y = 0; y < height; ++y) host_convolution_row(image.data(), out.data(), height, width, mask.data(), mask_k, y);
    CHECK(compare("out", out, convolution_reference(image, height, width, mask, mask_k).host(), Shape::grid(height, width),
                  convolution_tolerance(mask_k)).ok());
}

TEST_CASE("host: time_host measures a short loop and leaves a long one out, without running it")
{
    HostTimingOptions quick;
    quick.limit_seconds = 0.5;
    quick.settle_seconds = 0.05;
    std::atomic<int> rows_run{0};
    const auto sleepy = [&](int) {  // 1000 rows of 10 ms: 10 s on one thread, over the limit
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        ++rows_run;
    };
    const auto started = std::chrono::steady_clock::now();
    const HostTiming long_one = time_host(1000, 1, sleepy, quick);
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    CHECK_FALSE(long_one.measured);
    CHECK(long_one.note == "left out: over 0.5 s on 1 thread");
    CHECK_MESSAGE(waited < 0.6, "it should stop as soon as the pace is known, not after " << waited << " s");
    CHECK(rows_run < 100);

    const HostTiming short_one = time_host(10, 2, [](int) { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }, quick);
    CHECK(short_one.measured);
    CHECK(short_one.ms.count >= 1);
    CHECK(short_one.ms.median >= 4.0);   // 10 rows of 1 ms on 2 threads
    CHECK(short_one.ms.median < 100.0);

    // The clock stops when the last row is done, not when the watcher next looks: a watcher that
    // stopped it would make every loop last at least its 5 ms poll. (The bound is that poll, not
    // a speed: a loaded two-core machine took 2.3 ms to start and join the loop's thread.)
    const HostTiming tiny = time_host(10, 1, [](int) {}, quick);
    CHECK(tiny.measured);
    CHECK_MESSAGE(tiny.ms.median < 5.0, "an empty loop measured " << tiny.ms.median << " ms: the watcher's poll?");
}
