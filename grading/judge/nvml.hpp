/// \file nvml.hpp
/// \brief The device memory that given processes hold on this GPU, by NVML's per-process figure.
///
/// cudaMemGetInfo tells how much of the GPU is free, whoever holds the rest: another process on
/// the same GPU (a tool run of another lab, another student's grading) moves it as much as the
/// student's code does. NVML lists the processes that hold memory on a GPU, with how much each
/// holds, so the judge can read the runner's own figure instead.
///
/// The judge loads NVML (libnvidia-ml.so.1, the driver's) with dlopen on first use: linked, it
/// would keep the checker from starting where no driver is installed. The GPU is the judge's
/// current CUDA device, found in NVML by its PCI bus id (NVML's order of GPUs can differ from
/// CUDA's).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace workbook::nvml {

/// \brief A process and every process below it (its children, theirs, ...), as this process
/// sees them in /proc.
/// \param root the first process
/// \return `root` first (when it is still there), then its descendants
std::vector<pid_t> process_tree(pid_t root);

/// \brief The device memory that `pids` hold together on the judge's current CUDA device, by
/// NVML's per-process figure (nvmlDeviceGetComputeRunningProcesses_v3, else _v2): the sum over
/// those of `pids` that NVML lists.
/// \param pids the processes, as this process sees them
/// \param why_not where to say why there is no figure, when there is none (may be null)
/// \return the bytes, or nothing where NVML is missing, fails, gives no figure per process, or
/// lists none of `pids` on this GPU
std::optional<std::size_t> device_bytes_of(const std::vector<pid_t>& pids, std::string* why_not = nullptr);

}  // namespace workbook::nvml
