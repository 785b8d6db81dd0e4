// The parts of the checker library that use doctest's assertions: missing student functions and
// graded compute-sanitizer tests. Linked into every checker with checker_main.cpp.
#include "checker.hpp"
#include "tools.hpp"

namespace workbook {

bool have_function(const void* address, const char* name)
{
    if (address != nullptr) return true;
    FAIL_CHECK(name << " is missing from your file, so this test cannot run. Keep every function "
                       "of the skeleton, with the same name and parameters.");
    return false;
}

void sanitizer_test(const std::string& tool, const std::string& probe, const std::string& hint)
{
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
