// The main() of every lab checker, and the listener that reports results to the grader.
//
// Protocol (one JSON object per line, written to the descriptor in WORKBOOK_RESULTS_FD):
//   {"event":"list","tests":[{"name":...,"points":N,"bonus":N},...]}   for --list-test-cases
//   {"event":"run","seed":N,"device":"..."}                             before the first test
//   {"event":"start","name":...}                                        before each test
//   {"event":"end","name":...,"passed":B,"skipped":B,"seconds":S,"output":"..."}
//                                                                       after each test
//   In practice mode (CUDA IPC missing: calls.hpp, find_practice_mode) "run" and every "end"
//   also carry "practice":"<why>": those results are not for grading.
//   {"event":"context_lost","name":...}                                 a sticky CUDA error; the
//                                                                       process exits with 75
//   {"event":"no_device","message":"..."}                               the process exits with 77
//   {"event":"done"}                                                    all selected tests ran
// A checker the grader starts ahead of its turn (WORKBOOK_GO_FD, see wait_for_turn) readies the
// GPU and its runners, then waits for one byte on that pipe before it starts anything else.
// When the grader passes a key (on the pipe in WORKBOOK_KEY_FD), each line is followed by a tab
// and its HMAC-SHA256 under that key; the grader ignores lines without a valid signature.
// docs/grading.md describes how the grader uses it.
#define DOCTEST_CONFIG_IMPLEMENT
#include "checker.hpp"

#include "hmac.hpp"
#include "common/json.hpp"
#include "calls.hpp"
#include "tool_run.hpp"
#include "tools.hpp"
#include "grading/protocol/wire.hpp"

#include "common/check.hpp"
#include "common/device.hpp"
#include "common/random.hpp"

#include <cuda_runtime.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

namespace workbook {

namespace {

int g_results_fd = -1;
std::string g_key;  // the grader's per-run signing key; empty when run by hand
int g_go_fd = -1;   // the pipe on which the grader says "your turn"; -1 when run by hand

void emit(const std::string& line)
{
    if (g_results_fd < 0) return;
    const std::string text = line + (g_key.empty() ? "" : "\t" + hmac_sha256_hex(g_key, line)) + "\n";
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(g_results_fd, text.data() + done, text.size() - done);
        if (n <= 0) return;
        done += static_cast<std::size_t>(n);
    }
}

const char* const kPointTexts[] = {
    "points=0",  "points=1",  "points=2",  "points=3",  "points=4",  "points=5",  "points=6",
    "points=7",  "points=8",  "points=9",  "points=10", "points=11", "points=12", "points=13",
    "points=14", "points=15", "points=16", "points=17", "points=18", "points=19", "points=20"};
const char* const kBonusTexts[] = {
    "bonus=0",  "bonus=1",  "bonus=2",  "bonus=3",  "bonus=4",  "bonus=5",  "bonus=6",
    "bonus=7",  "bonus=8",  "bonus=9",  "bonus=10", "bonus=11", "bonus=12", "bonus=13",
    "bonus=14", "bonus=15", "bonus=16", "bonus=17", "bonus=18", "bonus=19", "bonus=20"};
constexpr int kMaxPoints = 20;

int decorated(const doctest::TestCaseData& test, const char* key)
{
    const char* text = test.m_description;
    const std::size_t len = std::strlen(key);
    if (text == nullptr || std::strncmp(text, key, len) != 0 || text[len] != '=') return 0;
    return std::atoi(text + len + 1);
}

// In practice mode, the field that marks a result as not for grading (calls.hpp); otherwise none.
std::string practice_field()
{
    const std::string& why = remote::practice_reason();
    return why.empty() ? "" : ",\"practice\":" + json_quote(why);
}

// Decides whether this checker runs in practice mode (find_practice_mode: a runner is asked
// where there is a GPU), and says so above every test when it does.
void decide_practice_mode(bool with_gpu)
{
    const std::string& why = remote::find_practice_mode(with_gpu);
    if (why.empty()) return;
    std::printf("practice mode: not for grading (%s)\n"
                "  your code still runs in its own process, on copies of the checker's device arrays made for each "
                "call; speed is measured by that process, on its own clock, one call at a time, without the "
                "copies (docs/grading.md, \"Practice mode\")\n",
                why.c_str());
    std::fflush(stdout);
}

// Records what each test said and reports it on the results channel.
struct GradeListener : doctest::IReporter {
    explicit GradeListener(const doctest::ContextOptions&) {}

    void report_query(const doctest::QueryData& query) override
    {
        // --version, --help and the like come with no run: nothing to list. A list that no test
        // matches (--test-case=NAME of a test another part of the lab holds) is listed, empty.
        if (query.run_stats == nullptr) return;
        std::string line = "{\"event\":\"list\",\"tests\":[";
        for (unsigned i = 0; i < query.num_data; ++i) {
            const auto& test = *query.data[i];
            if (i) line += ",";
            line += "{\"name\":" + json_quote(test.m_name) +
                    ",\"points\":" + std::to_string(decorated(test, "points")) +
                    ",\"bonus\":" + std::to_string(decorated(test, "bonus")) + "}";
        }
        emit(line + "]}");
    }

    void test_run_start() override
    {
#ifdef WORKBOOK_CHECKER_WITHOUT_GPU
        const std::string device = "none (a checker without GPU code)";
#else
        // Only reached when main() found a device, so device_facts() is safe here.
        const std::string device = device_facts().describe();
#endif
        emit("{\"event\":\"run\",\"seed\":" + std::to_string(run_seed()) +
             ",\"device\":" + json_quote(device) + practice_field() + "}");
    }

    void test_run_end(const doctest::TestRunStats&) override
    {
        stop_if_context_lost();
        emit("{\"event\":\"done\"}");
    }

    void test_case_start(const doctest::TestCaseData& test) override
    {
        stop_if_context_lost();
        name_ = test.m_name;
        output_.str("");
        test_started(name_);
        emit("{\"event\":\"start\",\"name\":" + json_quote(name_) + "}");
    }

    void test_case_reenter(const doctest::TestCaseData&) override {}

    void test_case_end(const doctest::CurrentTestCaseStats& stats) override
    {
#ifdef WORKBOOK_CHECKER_WITHOUT_GPU
        if (!stats.testCaseSuccess && sticky_error_seen()) lost_in_ = name_;
#else
        if (!stats.testCaseSuccess && (sticky_error_seen() || is_sticky(cudaDeviceSynchronize())))
            lost_in_ = name_;
#endif
        //! [skip reason]
        const bool skipped = !skip_reason().empty();
        //! [skip reason]
        if (skipped) {
            output_ << "skipped: " << skip_reason() << "\n";
            std::printf("%s: SKIPPED: %s\n", name_.c_str(), skip_reason().c_str());
        }
        emit("{\"event\":\"end\",\"name\":" + json_quote(name_) +
             ",\"passed\":" + (stats.testCaseSuccess && !skipped ? "true" : "false") +
             ",\"skipped\":" + (skipped ? "true" : "false") +
             ",\"seconds\":" + std::to_string(stats.seconds) +
             ",\"output\":" + json_quote(output_.str()) + practice_field() + "}");
    }

    void test_case_exception(const doctest::TestCaseException& e) override
    {
        output_ << (e.is_crash ? "the checker crashed: " : "stopped by an exception: ")
                << e.error_string.c_str() << "\n";
    }

    void subcase_start(const doctest::SubcaseSignature&) override {}
    void subcase_end() override {}

    void log_assert(const doctest::AssertData& a) override
    {
        if (!a.m_failed) return;
        for (int i = 0; i < get_num_active_contexts(); ++i) {
            std::ostringstream context;
            get_active_contexts()[i]->stringify(&context);
            output_ << context.str() << "\n";
        }
        output_ << "check failed: " << a.m_expr;
        if (a.m_threw) output_ << " threw: " << a.m_exception.c_str();
        else if (a.m_decomp.size() > 0) output_ << " (values: " << a.m_decomp.c_str() << ")";
        output_ << "\n";
    }

    void log_message(const doctest::MessageData& m) override { output_ << m.m_string.c_str() << "\n"; }

    void test_case_skipped(const doctest::TestCaseData&) override {}

private:
    // A sticky error leaves every later CUDA call failing; a fresh process is the only cure, so
    // the checker stops and the grader starts it again after the test that broke the context.
    void stop_if_context_lost()
    {
        if (lost_in_.empty()) return;
        emit("{\"event\":\"context_lost\",\"name\":" + json_quote(lost_in_) + "}");
        std::fflush(stdout);
        std::fprintf(stderr,
                     "\nThe GPU context was lost in test \"%s\" (a sticky CUDA error).\n"
                     "The remaining tests need a fresh process: `make check LAB=..` runs them "
                     "after this one.\n",
                     lost_in_.c_str());
        std::fflush(stderr);
        std::_Exit(exit_context_lost);
    }

    std::string name_;
    std::string lost_in_;
    std::ostringstream output_;
};

bool wants_only_information(int argc, char** argv)
{
    for (int i = 1; i < argc; ++i) {
        const char* arg = argv[i];
        while (*arg == '-') ++arg;
        for (const char* query : {"ltc", "list-test-cases", "lts", "list-test-suites", "lr",
                                  "list-reporters", "h", "help", "?", "v", "version", "c", "count"})
            if (std::strcmp(arg, query) == 0) return true;
    }
    return false;
}

// Whether this run starts at the first test and selects every test: only then are the probes'
// compute-sanitizer runs started early (a run of some tests would wait for runs it never uses).
bool runs_every_test(int argc, char** argv)
{
    for (int i = 1; i < argc; ++i) {
        const char* arg = argv[i];
        while (*arg == '-') ++arg;
        const std::string option(arg, std::strcspn(arg, "="));
        const char* value = arg + option.size() + (arg[option.size()] == '=' ? 1 : 0);
        for (const char* filter : {"tc", "test-case", "tce", "test-case-exclude", "sf", "source-file", "sfe",
                                   "source-file-exclude", "ts", "test-suite", "tse", "test-suite-exclude", "sc",
                                   "subcase", "sce", "subcase-exclude", "l", "last"})
            if (option == filter) return false;
        if ((option == "f" || option == "first") && std::atoi(value) > 1) return false;
    }
    return true;
}

// Takes the results channel and the signing key, and hides both from the code under test.
void take_results_channel()
{
    if (const char* fd = std::getenv("WORKBOOK_RESULTS_FD")) {
        g_results_fd = std::atoi(fd);
        unsetenv("WORKBOOK_RESULTS_FD");
    }
    if (const char* fd = std::getenv("WORKBOOK_KEY_FD")) {
        const int key_fd = std::atoi(fd);
        char buffer[256];
        ssize_t n;
        while ((n = ::read(key_fd, buffer, sizeof buffer)) > 0) g_key.append(buffer, static_cast<std::size_t>(n));
        ::close(key_fd);
        unsetenv("WORKBOOK_KEY_FD");
    }
    if (const char* fd = std::getenv("WORKBOOK_GO_FD")) {
        g_go_fd = std::atoi(fd);
        unsetenv("WORKBOOK_GO_FD");
    }
}

// The grader grades the labs one after another, and starts the next lab's checker while this
// one's tests run, so that its start (CUDA's, in this process and in the runners) is over when
// its turn comes. Such a checker waits here, its GPU ready; its tests wait here, and its runners
// under compute-sanitizer and Nsight Compute start only when its turn comes (start_tool_runs):
// CUDA's start under compute-sanitizer runs the tool's own work on the GPU. So nothing of this
// checker but its own start shares the GPU with the tests of the lab before it.
// A pipe closed without a byte means the grader no longer needs this run.
void wait_for_turn()
{
    if (g_go_fd < 0) return;
    const bool go = wait_for_byte(std::exchange(g_go_fd, -1));
    if (!go) std::_Exit(0);
}

// The NAME of `--workbook-probe=NAME`, given when a tool runs this checker for one probe
// (tools.hpp); nothing when the checker runs its tests.
std::optional<std::string> probe_to_run(int argc, char** argv)
{
    for (int i = 1; i < argc; ++i) {
        const char* prefix = "--workbook-probe=";
        if (std::strncmp(argv[i], prefix, std::strlen(prefix)) == 0) return std::string(argv[i] + std::strlen(prefix));
    }
    return std::nullopt;
}

// Runs one probe alone, under the tool that started this checker; the exit status is the
// probe's, so that the tool's verdict ("found errors") reaches the tool run (tools.hpp).
int run_probe_alone(const std::string& probe)
{
#ifndef WORKBOOK_CHECKER_WITHOUT_GPU
    // The tool wrapped around the runner starts while this process does.
    remote::student_runner().start_early();
#endif
    const DeviceProbe device = probe_device();
    if (device.status != DeviceProbe::Status::ok) {
        std::fprintf(stderr, "%s\nThe probe was not run.\n", device.message.c_str());
        return exit_no_device;
    }
    // The checker that started this run decided whether it runs in practice mode.
    remote::find_practice_mode(false);
    try {
        //! [run probe]
        if (!run_probe(probe)) {
            std::fprintf(stderr, "no probe named \"%s\"\n", probe.c_str());
            return 2;
        }
        //! [run probe]
        CUDA_CHECK(cudaDeviceSynchronize());
        // The runner ran the student's work, under the tool when one wraps it: its status
        // (a tool's "found errors") is the probe's.
        const int runner = remote::student_runner().finish();
        if (runner > 0) return runner;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "probe %s failed: %s\n", probe.c_str(), e.what());
        return 1;
    }
    return 0;
}

// CUDA starts one process at a time, and a grade starts about seventy: the judges, their
// runners, and the runners under compute-sanitizer and Nsight Compute. A context with one
// hardware work queue, instead of the default eight, starts in about half the time
// (docs/grading.md, "A ninth": 31 minimal programs, four at a time, 3.3 s instead of 6.2 s; a
// whole grade 37 s instead of 43 s). Streams keep their order and their results: only kernels
// of two streams of one process take turns instead of running side by side. Set before CUDA
// starts in this process; its runners and tool runs inherit it (runner_environment). A value
// set by whoever starts the checker is kept.
void one_work_queue_per_context()
{
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", "1", /*overwrite=*/0);
}

// Readies the GPU before the tests: the runners start, the device is checked and named with the
// seed, and the tool runs start early when every test will run. Returns the checker's exit
// status when no test can run, nothing when the tests can.
std::optional<int> ready_the_gpu(int argc, char** argv)
{
#ifndef WORKBOOK_CHECKER_WITHOUT_GPU
    // The runners start CUDA while this process does: a lab's run needs both.
    remote::start_runners_early(runs_every_test(argc, argv));
#endif
    const DeviceProbe probe = probe_device();
    if (probe.status != DeviceProbe::Status::ok) {
        std::fprintf(stderr, "%s\nNo test was run: every GPU test is skipped, none passed.\n",
                     probe.message.c_str());
        emit("{\"event\":\"no_device\",\"message\":" + json_quote(probe.message) + "}");
        return exit_no_device;
    }
    try {
        std::printf("device: %s\nseed: %llu (replay with WORKBOOK_SEED=%llu)\n",
                    device_facts().describe().c_str(),
                    static_cast<unsigned long long>(run_seed()),
                    static_cast<unsigned long long>(run_seed()));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "the GPU cannot be used: %s\n", e.what());
        return 1;
    }
    std::fflush(stdout);
    // CUDA starts one process at a time: the judge's own start goes before the tool runs'
    // (a probe judge and a runner each), which would hold up the first test by up to a second.
    cudaFree(nullptr);
    cudaGetLastError();
    return std::nullopt;
}

// The compute-sanitizer and Nsight Compute runs that the tests will read, started early when
// every test will run, so that they run while the first tests do.
void start_tool_runs(int argc, char** argv)
{
    if (runs_every_test(argc, argv)) start_tool_runs_early();
}

// The end of the run, once every test has reported: the runners end, and the results channel
// closes.
void end_run()
{
#ifndef WORKBOOK_CHECKER_WITHOUT_GPU
    // A runner wrapped in a tool (ncu) ends when asked, so that the tool writes its report.
    remote::end_runners();
#endif
    // Everything is reported: the grader need not wait while CUDA tears this process down.
    wire::release_output();
    if (g_results_fd >= 0) ::close(g_results_fd);
    g_results_fd = -1;
}

}  // namespace

doctest::description points(int n) { return doctest::description(kPointTexts[n < 0 ? 0 : n > kMaxPoints ? kMaxPoints : n]); }
doctest::description bonus(int n) { return doctest::description(kBonusTexts[n < 0 ? 0 : n > kMaxPoints ? kMaxPoints : n]); }

}  // namespace workbook

DOCTEST_REGISTER_LISTENER("workbook-grade", 1, workbook::GradeListener);

int main(int argc, char** argv)
{
    workbook::one_work_queue_per_context();
    workbook::take_results_channel();

#ifndef WORKBOOK_CHECKER_WITHOUT_GPU
    // The student's code runs in the runner: the judge's records, profiler runs and timings
    // go through it (calls.hpp).
    workbook::remote::record_from_runner();
    workbook::set_before_profiled_call(workbook::remote::profile_next_call);
#endif

    // `checker --workbook-probe=NAME`: run one probe alone, for ncu or compute-sanitizer.
    if (const std::optional<std::string> probe = workbook::probe_to_run(argc, argv))
        return workbook::run_probe_alone(*probe);

    doctest::Context context;
    context.setOption("no-version", true);
    context.applyCommandLine(argc, argv);

#ifdef WORKBOOK_CHECKER_WITHOUT_GPU
    const bool needs_device = false;  // the grader's self-test checker has no GPU code
#else
    const bool needs_device = !workbook::wants_only_information(argc, argv);
#endif
    if (needs_device)
        if (const std::optional<int> stop = workbook::ready_the_gpu(argc, argv)) return *stop;
    // Before the tool runs start: they take this decision (WORKBOOK_PRACTICE_MODE).
    if (!workbook::wants_only_information(argc, argv)) workbook::decide_practice_mode(needs_device);
    if (!workbook::wants_only_information(argc, argv)) {
        workbook::wait_for_turn();
        if (needs_device) workbook::start_tool_runs(argc, argv);
    }
    const int status = context.run();
    workbook::end_run();
    return status;
}
