/// \file ncu.hpp
/// \brief Reading Nsight Compute's output: what read_counters (ncu.cpp) and explain_slowness
/// (slowness.cpp) share.
///
/// Private to grading/: a checker includes tools.hpp. Both run `ncu --csv` and read its output
/// here, in one place, so that both understand its format and its refusals alike.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace workbook {

/// \brief One launch that ncu profiled, read from its --csv output: the kernel and its metrics.
struct Profile {
    std::string kernel;                     ///< the kernel's name, as ncu gives it
    std::map<std::string, double> metrics;  ///< metric name -> value

    /// \brief A metric's value, or NaN when ncu did not report it.
    /// \param name the metric's name
    double get(const std::string& name) const
    {
        const auto found = metrics.find(name);
        return found == metrics.end() ? NAN : found->second;
    }
};

/// \brief The launches in ncu's CSV output, one Profile per launch ID: the one reader of that output.
/// \param output everything ncu printed
std::vector<Profile> read_profiles(const std::string& output);

/// \brief Why ncu read no counters, when it says it may not read them here.
/// \param output everything ncu printed
/// \return the reason, or "" when ncu did not refuse
std::string counters_forbidden(const std::string& output);

}  // namespace workbook
