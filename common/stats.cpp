#include "stats.hpp"

#include <algorithm>

namespace workbook {

namespace {
double quantile(const std::vector<double>& sorted, double q)
{
    const double pos = q * static_cast<double>(sorted.size() - 1);
    const std::size_t lo = static_cast<std::size_t>(pos);
    const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}
}  // namespace

Summary summarize(std::vector<double> samples)
{
    Summary s;
    if (samples.empty()) return s;
    std::sort(samples.begin(), samples.end());
    s.count = samples.size();
    s.min = samples.front();
    s.max = samples.back();
    s.q1 = quantile(samples, 0.25);
    s.median = quantile(samples, 0.5);
    s.q3 = quantile(samples, 0.75);
    return s;
}

}  // namespace workbook
