/// \file stats.hpp
/// \brief Order statistics of repeated measurements: median and spread.
#pragma once

#include <cstddef>
#include <vector>

namespace workbook {

/// \brief The order statistics of a set of samples.
struct Summary {
    std::size_t count = 0;  ///< number of samples
    double min = 0;         ///< smallest sample
    double q1 = 0;          ///< first quartile
    double median = 0;      ///< median
    double q3 = 0;          ///< third quartile
    double max = 0;         ///< largest sample

    /// \brief The interquartile range relative to the median (0.02 = 2 %), a robust spread.
    double spread() const { return median > 0 ? (q3 - q1) / median : 0; }
};

/// \brief Summarises samples by their quantiles (linear interpolation between order statistics).
/// \param samples the measurements, in any order; an empty set gives an all-zero Summary
/// \snippet common/tests/test_common.cpp summarize
Summary summarize(std::vector<double> samples);

}  // namespace workbook
