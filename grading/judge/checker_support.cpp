// The parts of the checker library that use doctest's assertions: missing student functions, the
// judge's correctness and performance tests, and graded compute-sanitizer tests. Linked into
// every checker with checker_main.cpp.
#include "checker.hpp"
#include "nvml.hpp"
#include "calls.hpp"
#include "tools.hpp"

#include <cstdlib>
#include <fstream>

namespace workbook {

namespace {
std::string g_test_name;   // the running test, for the profiler runs of explain_slowness
bool g_explained = false;  // whether this test has already asked Nsight Compute why it is slow

// A grade of the reference solution (WORKBOOK_REFERENCE_FIGURES_OUT): the reference's figure of
// each timed call, a line of "call<TAB>ms<TAB>test name", which the grade keeps with its times
// and hands to later checkers (remote::reference_run_ms).
void keep_reference_figure(int call, double ms)
{
    const char* path = std::getenv("WORKBOOK_REFERENCE_FIGURES_OUT");
    if (path == nullptr || !(ms > 0)) return;
    std::ofstream out(path, std::ios::app);
    out << call << '\t' << ms << '\t' << g_test_name << '\n';
}
}

void test_started(const std::string& name)
{
    g_test_name = name;
    remote::set_running_test(name);
    g_explained = false;
    judge_test_started();
    //! [clear skip]
    clear_skip();
    //! [clear skip]
}

bool gpu_runs(const Architecture& needed)
{
    const std::string why_not = why_not_on_this_gpu(needed);
    if (!why_not.empty()) skip_test(why_not);
    return why_not.empty();
}

std::optional<std::size_t> runner_device_bytes(std::string* why_not)
{
    const pid_t first = remote::student_runner().pid();
    if (first <= 0) {
        if (why_not != nullptr) *why_not = "the process that runs your code is not running";
        return std::nullopt;
    }
    return nvml::device_bytes_of(nvml::process_tree(first), why_not);
}

bool have_function(const void* address, const char* name)
{
    // A forwarder stands for a function of the student's file: the runner says whether it is there.
    const char* forwarded = remote::forwarder_name(address);
    if (address != nullptr && (forwarded == nullptr || remote::student_runner().defines(forwarded))) return true;
    FAIL_CHECK(std::string(name) << " is missing from your file, so this test cannot run. Keep every function "
                       "of the skeleton, with the same name and parameters.");
    return false;
}

bool check(const Call& call)
{
    //! [have function]
    if (!have_function(call.address, call.function.c_str())) return false;
    //! [have function]
    const Verdict verdict = judge_call(call);
    if (!verdict.ok) FAIL_CHECK(verdict.message);
    return verdict.ok;
}

SpeedVerdict check_speed(const Call& yours, const std::function<void(float* out)>& reference, const Work& work)
{
    if (!have_function(yours.address, yours.function.c_str())) return {};
    const SpeedVerdict verdict = time_call(yours, reference, work);
    if (verdict.profiled) return verdict;
    if (!verdict.yours.empty()) MESSAGE(verdict.yours);
    if (!verdict.reference.empty()) MESSAGE(verdict.reference);
    keep_reference_figure(verdict.call, verdict.reference_ms);
    // Practice mode (calls.hpp): both sides were timed by their own runner, not by the judge.
    if (!remote::practice_reason().empty())
        MESSAGE("practice mode: both times are the runners' own, each call alone, without the copies of its "
                "arrays: not for grading");
    if (verdict.ok) return verdict;
    // One explanation per test: a test that times several cases explains its first slow one.
    if (verdict.slow && !g_explained) {
        g_explained = true;
        FAIL_CHECK(verdict.message << "\n" << explain_slowness(g_test_name, verdict.call));
    } else {
        FAIL_CHECK(verdict.message);
    }
    return verdict;
}

bool require_correct(const Call& call, const std::string& what)
{
    if (!have_function(call.address, call.function.c_str())) return false;
    const Verdict verdict = judge_call(call);
    if (!verdict.ok)
        FAIL_CHECK("not checked: " << what << " is measured only on a correct kernel, and " << call.function
                   << " is wrong at " << call.what << ". Make the correctness tests pass first.\n" << verdict.message);
    return verdict.ok;
}

void run_calls(const std::vector<Call>& calls)
{
    for (const Call& call : calls)
        if (call.address != nullptr) run_once(call);
}

void sanitizer_test(const std::string& tool, const std::string& probe, const std::vector<Call>& calls,
                    const std::string& hint)
{
    for (const Call& call : calls)
        if (!require_correct(call, "compute-sanitizer " + tool)) return;
    const SanitizerReport report = sanitize(tool, probe);
    switch (report.verdict) {
    case SanitizerReport::Verdict::unavailable:
        skip_test(report.why_not);
        return;
    case SanitizerReport::Verdict::probe_failed:
        FAIL_CHECK("compute-sanitizer " << tool << " could not finish: " << report.why_not);
        return;
    case SanitizerReport::Verdict::findings:
        FAIL_CHECK("compute-sanitizer " << tool << " found errors in your kernels:\n" << report.findings
                   << "Hint: " << hint);
        return;
    case SanitizerReport::Verdict::clean:
        MESSAGE("compute-sanitizer " << tool << ": no error found");
        return;
    }
}

}  // namespace workbook
