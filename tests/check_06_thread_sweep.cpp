// Checker for lab 06, the thread-count sweep.
//
// The dynamic-tile matmul at every swept tile on a shape no tile divides; vector add at every
// swept block size; the occupancy predictions; the sweep's completeness; the curve's shape,
// checked loosely and only as ratios; and the report: a table, a CSV, the CPU reference and a
// plot.
#include "matmul_cases.hpp"

#include "06_thread_sweep.hpp"
// The reference solution's functions, with the types of yours: its object is linked beside yours
// with every name moved into namespace reference (grading/buildtools/reference_object.py).
namespace reference {
decltype(::predicted_occupancy_matmul) predicted_occupancy_matmul;
decltype(::predicted_occupancy_vector_add) predicted_occupancy_vector_add;
}  // namespace reference

#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>

using namespace workbook;

namespace {

const int kTiles[] = {1, 2, 4, 8, 16, 32};
const int kBlockSizes[] = {32, 64, 128, 256, 512, 1024};
constexpr int kPaperSize = 512;   // the IJCEE paper's Table 2
// 1 Mi threads at the largest tile: four times what an H100 holds at once (132 SMs of 2048), so
// the GPU is full; at 2048 a block of 1 thread takes half a second a run.
constexpr int kLargeSize = 1024;
constexpr int kVectorN = 1 << 26;
constexpr int kSampledVectorN = 1 << 24;  // 192 MiB in all: far larger than any L2
constexpr double kSweepAgreement = 2.0;   // a reported point may differ from the checker's by 2x

Call tile_call(int tile, int m = 100, int k = 70, int n = 90)
{
    return matmul::call([tile](const float* a, const float* b, float* c, int m, int k, int n) {
        launch_matmul_dynamic_tile(a, b, c, m, k, n, tile);
    }, WORKBOOK_ADDRESS(launch_matmul_dynamic_tile), "launch_matmul_dynamic_tile with tile " + std::to_string(tile),
       m, k, n, " Does the kernel take its tile edge from blockDim.x, and does the launch give it "
       "2 * tile * tile floats of shared memory?");
}
void check_tile(int tile) { check(tile_call(tile)); }

// Random a and b on the device, and their float64 sum: one case, shared by every block size.
struct VectorCase {
    explicit VectorCase(int n_)
        : n(n_), a(random_floats(n_, seed_for("va"))), b(random_floats(n_, seed_for("vb"))), device_a(a),
          device_b(b), c(sum_reference(a, b))
    {
    }
    int n;
    std::vector<float> a, b;
    DeviceBuffer<float> device_a, device_b;
    Reference c;
};

// Vector add with blocks of `threads` threads.
Call vector_call(const std::shared_ptr<const VectorCase>& v, int threads)
{
    Call call;
    call.function = "launch_vector_add_blocks";
    call.address = WORKBOOK_ADDRESS(launch_vector_add_blocks);
    call.what = "n = " + std::to_string(v->n) + ", " + std::to_string(threads) + " threads per block";
    call.output = "c";
    call.shape = Shape::vector(v->n);
    call.tolerance = Tolerance{0, 0x1p-23, "one rounding of a + b"};
    call.expected = [v]() -> const Reference& { return v->c; };
    call.run = [v, threads](float* out) { launch_vector_add_blocks(v->device_a.data(), v->device_b.data(), out, v->n, threads); };
    call.inputs = {{v->device_a.data(), v->device_a.size(), "a"}, {v->device_b.data(), v->device_b.size(), "b"}};
    call.diagnose = [](const Failure&) { return std::string("blocks = (n + threads_per_block - 1) / threads_per_block."); };
    return call;
}

// What compute-sanitizer watches: every tile, and every block size. The shape is smaller than the
// tests' 100 x 70 x 90 but as awkward (odd: no tile of 2 or more divides it, so every tile has
// partial blocks, and k = 35 gives tile 32 two phases): racecheck follows every shared-memory
// access, and at 100 x 70 x 90 it held up the whole lab for 3.5 s on an H100.
std::vector<Call> small_sizes()
{
    std::vector<Call> calls;
    for (int tile : kTiles) calls.push_back(tile_call(tile, 33, 35, 45));
    const auto vectors = std::make_shared<const VectorCase>(1000);
    for (int threads : kBlockSizes) calls.push_back(vector_call(vectors, threads));
    return calls;
}

struct Matrices {
    explicit Matrices(int size)
        : a(random_floats(static_cast<std::size_t>(size) * size, seed_for("sweep a"))),
          b(random_floats(static_cast<std::size_t>(size) * size, seed_for("sweep b"))),
          c(static_cast<std::size_t>(size) * size) {}
    DeviceBuffer<float> a, b, c;
};

struct Vectors {
    explicit Vectors(int n)
        : a(random_floats(n, seed_for("sweep va"))), b(random_floats(n, seed_for("sweep vb"))), c(n) {}
    DeviceBuffer<float> a, b, c;
};

// Whether a sweep has exactly the expected settings, in order, with sane values.
bool complete(const std::vector<SweepPoint>& points, const std::vector<int>& expected, double work,
              std::string& why)
{
    std::vector<int> got;
    for (const SweepPoint& p : points) got.push_back(p.threads_per_block);
    if (got != expected) {
        why = "expected points at";
        for (int t : expected) why += " " + std::to_string(t);
        why += " threads per block, got";
        for (int t : got) why += " " + std::to_string(t);
        why += got.size() < expected.size() ? " (points missing)" : "";
        return false;
    }
    for (const SweepPoint& p : points) {
        const double rate_from_time = work / (p.ms * 1e-3) / 1e9;
        if (!(p.ms > 0) || std::fabs(p.rate - rate_from_time) > 0.05 * rate_from_time || !(p.occupancy > 0) ||
            p.occupancy > 1) {
            why = "the point at " + std::to_string(p.threads_per_block) + " threads has ms = " +
                  std::to_string(p.ms) + ", rate = " + std::to_string(p.rate) + " (the work over the time gives " +
                  std::to_string(rate_from_time) + "), occupancy = " + std::to_string(p.occupancy);
            return false;
        }
    }
    return true;
}

// Whether a sweep's point at `threads` threads per block is within 2x of the checker's own time
// of the same launch (`time_launch`). The checker times it up to three times and the point passes
// once one timing agrees: a moment when something else held the GPU must not fail a correct
// sweep, while a point that was not timed at its own block size disagrees every time.
bool agrees(const std::string& sweep, const std::vector<SweepPoint>& points, int threads,
            const std::function<double()>& time_launch, std::string& why)
{
    const auto point = std::find_if(points.begin(), points.end(),
                                    [&](const SweepPoint& p) { return p.threads_per_block == threads; });
    if (point == points.end()) {
        why = sweep + ": no point at " + std::to_string(threads) + " threads per block";
        return false;
    }
    std::string timings;
    double apart = 0;
    for (int attempt = 0; attempt < 3; ++attempt) {
        const double checker_ms = time_launch();
        apart = std::max(point->ms / checker_ms, checker_ms / point->ms);
        if (apart <= kSweepAgreement) return true;
        timings += (attempt ? ", " : "") + std::to_string(checker_ms);
    }
    why = sweep + ": the point at " + std::to_string(threads) + " threads per block says " +
          std::to_string(point->ms) + " ms, but the checker timed your launch with that block at " + timings +
          " ms, three times (the last " + std::to_string(apart) + "x apart; within " +
          std::to_string(kSweepAgreement) + "x passes). Does each point time the launch with its own block size?";
    return false;
}

double cpu_matmul_ms(int size, int threads)
{
    const std::vector<float> a = random_floats(static_cast<std::size_t>(size) * size, 1);
    const std::vector<float> b = random_floats(static_cast<std::size_t>(size) * size, 2);
    std::vector<float> c(a.size());
    // A reported line, not a graded one: up to three runs, stopping once a quarter of a second
    // is spent, keeps every student's grade run short (make bench times the CPU with more care).
    HostTimingOptions quick;
    quick.max_runs = 3;
    quick.min_total_seconds = 0.25;
    //! [time host]
    const HostTiming t = time_host(size, threads, [&](int i) { host_matmul_row(a.data(), b.data(), c.data(), size, size, i); }, quick);
    //! [time host]
    return t.measured ? t.ms.median : NAN;
}

//! [output folder]
std::string csv_path() { return output_folder("lab06") + "/sweep.csv"; }
//! [output folder]

// Set when this process wrote a complete sweep.csv: the plot must never draw a file left over
// from an earlier run (or from another tree's solution).
bool g_report_complete = false;

// The checker's own time of your launch_matmul_dynamic_tile at 512, by tile: the first timing of
// each, made by the sweep test, is the curve test's too (the same call, data and options), so
// that a grade run times each tile once. Run alone, the curve test times every tile itself.
std::map<int, double> g_matmul_ms_at_512;

double checker_matmul_ms_at_512(Matrices& m, int tile)
{
    const double ms = time_gpu([&] {
        launch_matmul_dynamic_tile(m.a.data(), m.b.data(), m.c.data(), kPaperSize, kPaperSize, kPaperSize, tile);
    }, TimingOptions{1, 5, true}).ms_per_run();
    g_matmul_ms_at_512.emplace(tile, ms);  // the first one kept
    return ms;
}

// The plot script exits with this status where its python3 has no matplotlib: the checker then
// tries the system's python3, and skips the plot test if that has none either.
constexpr int kNoMatplotlib = 77;

// grading/driver/plot_sweep.py, started before it is needed: loading matplotlib takes over a second, which
// then overlaps the sweeps on the GPU instead of following them. It waits on its standard input
// (a socket), draws when sent "plot", and exits without drawing when the socket closes.
class PlotScript {
public:
    PlotScript(const std::string& python, const std::string& folder)
        : command_(python + " '" + WORKBOOK_SOURCE_DIR + "/grading/driver/plot_sweep.py' --on-request '" + folder + "'")
    {
        int ends[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) return;
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, ends[1], 0);  // dup2 clears close-on-exec
        const std::string script = std::string(WORKBOOK_SOURCE_DIR) + "/grading/driver/plot_sweep.py";
        const char* argv[] = {python.c_str(), script.c_str(), "--on-request", folder.c_str(), nullptr};
        if (posix_spawnp(&pid_, python.c_str(), &actions, nullptr, const_cast<char* const*>(argv), environ) != 0)
            pid_ = -1;
        posix_spawn_file_actions_destroy(&actions);
        ::close(ends[1]);
        socket_ = ends[0];
    }
    ~PlotScript()
    {
        if (socket_ >= 0) ::close(socket_);
        if (pid_ > 0) {
            ::kill(pid_, SIGTERM);
            ::waitpid(pid_, nullptr, 0);
        }
    }
    PlotScript(const PlotScript&) = delete;
    PlotScript& operator=(const PlotScript&) = delete;

    // Asks for the plot and waits for it: the script's exit status (kNoMatplotlib: no matplotlib).
    int draw()
    {
        if (pid_ <= 0) return 127;  // the python3 could not be started
        const char request[] = "plot\n";
        ::send(socket_, request, sizeof request - 1, MSG_NOSIGNAL);  // fails only if it has exited
        ::close(std::exchange(socket_, -1));
        int raw = 0;
        ::waitpid(std::exchange(pid_, -1), &raw, 0);
        return WIFEXITED(raw) ? WEXITSTATUS(raw) : 128;
    }
    const std::string& command() const { return command_; }

private:
    std::string command_;
    pid_t pid_ = -1;
    int socket_ = -1;
};

// Started by the report test, for the plot test.
std::unique_ptr<PlotScript> g_plot;

}  // namespace

TEST_CASE("tile 1 x 1: 100 x 70 x 90" * points(1)) { check_tile(1); }
TEST_CASE("tile 2 x 2: 100 x 70 x 90" * points(1)) { check_tile(2); }
TEST_CASE("tile 4 x 4: 100 x 70 x 90" * points(1)) { check_tile(4); }
TEST_CASE("tile 8 x 8: 100 x 70 x 90" * points(1)) { check_tile(8); }
TEST_CASE("tile 16 x 16: 100 x 70 x 90" * points(1)) { check_tile(16); }
TEST_CASE("tile 32 x 32: 100 x 70 x 90" * points(1)) { check_tile(32); }

WORKBOOK_PROBE("small sizes", "memcheck", "racecheck", "synccheck") { run_calls(small_sizes()); }

TEST_CASE("compute-sanitizer memcheck: every tile" * points(1))
{
    sanitizer_test("memcheck", "small sizes", small_sizes(), "a tile larger than the shared memory the launch "
                   "gave it runs past its end: 2 * tile * tile floats.");
}

TEST_CASE("compute-sanitizer racecheck: every tile" * points(1))
{
    sanitizer_test("racecheck", "small sizes", small_sizes(), "each phase needs a barrier after the loads and "
                   "another before the next phase overwrites the tiles.");
}

TEST_CASE("compute-sanitizer synccheck: every tile" * points(1))
{
    sanitizer_test("synccheck", "small sizes", small_sizes(), "every thread must reach both barriers of each phase.");
}

TEST_CASE("vector add with every block size: n = 1000003" * points(1))
{
    const auto vectors = std::make_shared<const VectorCase>(1000003);
    for (int threads : kBlockSizes)
        if (!check(vector_call(vectors, threads))) return;
}

TEST_CASE("occupancy: what the runtime predicts" * points(1))
{
    REQUIRE_STUDENT_FUNCTION(predicted_occupancy_matmul);
    REQUIRE_STUDENT_FUNCTION(predicted_occupancy_vector_add);
    REQUIRE_STUDENT_FUNCTION(suggested_vector_add_block_size);
    for (int tile : kTiles) {
        const double yours = predicted_occupancy_matmul(tile), theirs = reference::predicted_occupancy_matmul(tile);
        if (!(yours > 0 && yours <= 1 && std::fabs(yours - theirs) <= 0.25))
            FAIL_CHECK("predicted_occupancy_matmul(" << tile << ") = " << yours << "; the reference predicts "
                       << theirs << " for its kernel.\nHint: active blocks per SM times warps per block "
                       "((threads + 31) / 32), over cudaDevAttrMaxThreadsPerMultiProcessor / 32.");
    }
    for (int threads : kBlockSizes) {
        const double yours = predicted_occupancy_vector_add(threads), theirs = reference::predicted_occupancy_vector_add(threads);
        if (!(yours > 0 && yours <= 1 && std::fabs(yours - theirs) <= 0.25))
            FAIL_CHECK("predicted_occupancy_vector_add(" << threads << ") = " << yours << "; the reference predicts " << theirs);
    }
    const int suggested = suggested_vector_add_block_size();
    if (suggested < 32 || suggested > 1024 || suggested % 32 != 0)
        FAIL_CHECK("suggested_vector_add_block_size() = " << suggested
                   << ": cudaOccupancyMaxPotentialBlockSize suggests a whole number of warps, 32 to 1024");
}

TEST_CASE("the sweep produces every point" * points(2))
{
    REQUIRE_STUDENT_FUNCTION(sweep_matmul);
    REQUIRE_STUDENT_FUNCTION(sweep_vector_add);
    REQUIRE_STUDENT_FUNCTION(launch_matmul_dynamic_tile);
    REQUIRE_STUDENT_FUNCTION(launch_vector_add_blocks);
    //! [gpu alone]
    have_gpu_alone();  // the sweep times the GPU itself, maybe not with time_gpu
    //! [gpu alone]
    Matrices m(kPaperSize);
    std::string why;
    const std::vector<SweepPoint> matmul = sweep_matmul(m.a.data(), m.b.data(), m.c.data(), kPaperSize);
    if (!complete(matmul, {1, 4, 16, 64, 256, 1024}, 2.0 * kPaperSize * kPaperSize * kPaperSize, why))
        FAIL_CHECK("sweep_matmul at 512: " << why);
    else  // Measured, not trusted: the checker times every point itself, at its own block size.
        for (const SweepPoint& point : matmul) {
            const int threads = point.threads_per_block;
            const int tile = static_cast<int>(std::lround(std::sqrt(threads)));
            const auto time_launch = [&] { return checker_matmul_ms_at_512(m, tile); };
            if (!agrees("sweep_matmul at 512", matmul, threads, time_launch, why)) FAIL_CHECK(why);
        }
    // Vectors larger than L2, so that a sweep timed with or without flushing it reads the same.
    const int n = kSampledVectorN;
    Vectors v(n);
    const std::vector<SweepPoint> vectors = sweep_vector_add(v.a.data(), v.b.data(), v.c.data(), n);
    if (!complete(vectors, {32, 64, 128, 256, 512, 1024}, 3.0 * n * sizeof(float), why))
        FAIL_CHECK("sweep_vector_add: " << why);
    else
        for (const SweepPoint& point : vectors) {
            const int threads = point.threads_per_block;
            const auto time_launch = [&] {
                return time_gpu([&] { launch_vector_add_blocks(v.a.data(), v.b.data(), v.c.data(), n, threads); })
                    .ms_per_run();
            };
            if (!agrees("sweep_vector_add at n = 2^24", vectors, threads, time_launch, why)) FAIL_CHECK(why);
        }
}

TEST_CASE("the curve: 1 thread per block is far slower than 256 and the best is at 64 or more" * points(2))
{
    REQUIRE_STUDENT_FUNCTION(launch_matmul_dynamic_tile);
    // Only a correct kernel has a curve: a launch that does nothing takes no time at any tile.
    for (int tile : kTiles)
        if (!require_correct(tile_call(tile, kPaperSize, kPaperSize, kPaperSize), "the curve")) return;
    // Timed here, on your launch, not taken from your sweep; compared only with each other.
    Matrices m(kPaperSize);
    std::vector<double> ms;
    for (int tile : kTiles) {
        const auto timed = g_matmul_ms_at_512.find(tile);
        ms.push_back(timed != g_matmul_ms_at_512.end() ? timed->second : checker_matmul_ms_at_512(m, tile));
    }
    const int best = kTiles[std::min_element(ms.begin(), ms.end()) - ms.begin()];
    MESSAGE("your kernel at 512: 1 thread " << ms[0] << " ms, 256 threads " << ms[4] << " ms, fastest with "
            << best * best << " threads per block");
    if (ms[0] < 4 * ms[4])
        FAIL_CHECK("blocks of 1 thread take only " << ms[0] / ms[4] << "x the time of blocks of 256: expected "
                   "far slower (a block of 1 thread wastes 31 of its warp's 32 lanes).");
    if (best * best < 64)
        FAIL_CHECK("the fastest tile has " << best * best << " threads per block; expected 64 or more.");
}

TEST_CASE("the sweep report: table and CSV beside the CPU" * points(2))
{
    REQUIRE_STUDENT_FUNCTION(sweep_matmul);
    REQUIRE_STUDENT_FUNCTION(sweep_vector_add);
    REQUIRE_STUDENT_FUNCTION(suggested_vector_add_block_size);
    have_gpu_alone();  // the sweep times the GPU itself, maybe not with time_gpu

    // The CPU reference lines, as in the paper (only at 512: at 1024 one thread would take seconds).
    // Measured first, while nothing else uses the CPU.
    //! [host threads]
    const int cores = host_threads();
    //! [host threads]
    const double one = cpu_matmul_ms(kPaperSize, 1), all = cpu_matmul_ms(kPaperSize, cores);
    std::ofstream(output_folder("lab06") + "/cpu.csv") << "size,threads,ms\n" << kPaperSize << ",1," << one << "\n"
                                                       << kPaperSize << "," << cores << "," << all << "\n";
    g_plot = std::make_unique<PlotScript>("python3", output_folder("lab06"));

    //! [report]
    const std::string csv = csv_path();
    std::remove(csv.c_str());
    for (int size : {kPaperSize, kLargeSize}) {
        Matrices m(size);
        Sweep sweep{"tiled matmul " + std::to_string(size) + " x " + std::to_string(size), "GFLOP/s",
                    sgemm_gflops(size, size, size), "cuBLAS", {}};
        MESSAGE("sweeping the matmul at " << size << " x " << size << ":");
        sweep.points = sweep_matmul(m.a.data(), m.b.data(), m.c.data(), size);
        MESSAGE(sweep_table(sweep));
        append_sweep_csv(csv, sweep, size);
    }
    Vectors v(kVectorN);
    //! [copy ceiling]
    Sweep vectors{"vector add 2^26", "GB/s", copy_ceiling_gbs(), "copy", {}};
    //! [copy ceiling]
    vectors.points = sweep_vector_add(v.a.data(), v.b.data(), v.c.data(), kVectorN);
    MESSAGE(sweep_table(vectors));
    append_sweep_csv(csv, vectors, kVectorN);
    //! [report]
    MESSAGE("cudaOccupancyMaxPotentialBlockSize suggests " << suggested_vector_add_block_size()
            << " threads per block for vector add");
    MESSAGE("CPU at 512 x 512: " << one << " ms on 1 thread, " << all << " ms on " << cores
            << " (the paper's host: 357 ms)");
    std::ifstream check(csv);
    const long lines = std::count(std::istreambuf_iterator<char>(check), std::istreambuf_iterator<char>(), '\n');
    g_report_complete = lines == 1 + 6 + 6 + 6;
    CHECK_MESSAGE(g_report_complete, "the CSV " << csv << " should hold a header and 18 points");
    MESSAGE("written: " << csv);
}

TEST_CASE("the sweep plot: PNG and SVG drawn by matplotlib" * points(1))
{
    const std::string folder = output_folder("lab06");
    if (!g_report_complete) {
        FAIL_CHECK("nothing to plot: the report test above did not write a complete " << folder
                   << "/sweep.csv in this run");
        return;
    }
    // The python3 on PATH may be another interpreter than the system's (pyenv, a venv): where it
    // has no matplotlib, the system's gets its turn. The first is the one the report test started.
    int status = kNoMatplotlib;
    std::string command;
    for (const char* python : {"python3", "/usr/bin/python3"}) {
        if (status != kNoMatplotlib) break;
        const std::unique_ptr<PlotScript> script =
            g_plot ? std::move(g_plot) : std::make_unique<PlotScript>(python, folder);
        command = script->command();
        status = script->draw();
    }
    //! [skip]
    if (status == kNoMatplotlib) {
        skip_test("no python3 with matplotlib is installed (Debian: python3-matplotlib)");
        return;
    }
    //! [skip]
    CHECK_MESSAGE(status == 0, "the plot script failed (exit status " << status << "): " << command);
    for (const std::string file : {"/sweep.png", "/sweep.svg"})  // doctest streams a const char* as an address
        CHECK_MESSAGE(std::ifstream(folder + file).good(), "the plot " << folder + file << " was not written");
    MESSAGE("plots: " << folder << "/sweep.png and sweep.svg");
}
