/// \file sweep.hpp
/// \brief Parameter sweeps: one measured point per setting, printed as a table and saved as CSV.
///
/// Lab 06 sweeps the number of threads per block. Each point keeps the median time, the rate
/// (GFLOP/s or GB/s), that rate as a share of the device's ceiling, and the occupancy the CUDA
/// runtime predicts, so the table shows speed and occupancy side by side.
#pragma once

#include <string>
#include <vector>

namespace workbook {

/// \brief One measured setting of a sweep.
struct SweepPoint {
    int threads_per_block = 0;  ///< the swept setting
    double ms = 0;              ///< median time per run, milliseconds
    double rate = 0;            ///< GFLOP/s or GB/s, from the work and the median time
    double occupancy = 0;       ///< predicted active warps per SM over the maximum, 0..1
};

/// \brief A sweep's points and what they measured.
struct Sweep {
    std::string experiment;  ///< e.g. "tiled matmul 512 x 512"
    std::string unit;        ///< "GFLOP/s" or "GB/s"
    double ceiling = 0;      ///< the device's ceiling in the same unit (cuBLAS or copy)
    std::string ceiling_name;  ///< e.g. "cuBLAS SGEMM" or "copy"
    std::vector<SweepPoint> points;  ///< in sweep order
};

/// \brief The sweep as a text table: threads, time, rate, % of the ceiling, occupancy.
/// \param sweep the measured sweep
/// \snippet tests/check_06_thread_sweep.cpp report
std::string sweep_table(const Sweep& sweep);

/// \brief Appends the sweep's points to a CSV file, writing the header when the file is new.
/// \param path the CSV file
/// \param sweep the measured sweep
/// \param size the problem size, for the size column
/// \snippet tests/check_06_thread_sweep.cpp report
void append_sweep_csv(const std::string& path, const Sweep& sweep, long long size);

/// \brief A folder for a lab's output files beside the build's bin/ folder, e.g. build/lab06.
/// \param name the folder's name
/// \return its path, created if missing
/// \snippet tests/check_06_thread_sweep.cpp output folder
std::string output_folder(const std::string& name);

/// \brief Prints a progress line for long runs, e.g. "[3/6] 16 threads per block".
/// \param step this step, from 1
/// \param steps how many in all
/// \param what what is being measured
/// \snippet solutions/06_thread_sweep/sweep.cu sweep
void progress(int step, int steps, const std::string& what);

}  // namespace workbook
