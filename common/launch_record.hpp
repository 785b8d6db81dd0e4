/// \file launch_record.hpp
/// \brief What a graded call really did on the GPU: the kernels it launched and the bytes it
/// copied back to the host, recorded by CUPTI.
///
/// A checker compares the student's output with a float64 reference, but a correct output does
/// not prove that the student's kernel computed it: cuBLAS, another library or the CPU can stand
/// in. (The reference solution, linked beside the student's file, cannot: a file that calls it
/// fails to build, see grading/buildtools/student_symbols.py.) CUPTI, NVIDIA's profiling interface that ships with the CUDA toolkit, sees every
/// kernel the process launches, whoever launches it. The judge (judge.hpp) opens a recording
/// around each call of a student's function and then checks that a kernel ran and that every
/// kernel that ran is defined in the student's own file.
///
/// Which kernels are the student's is decided when the checker is built: a build step lists the
/// symbols defined in the student's object file (grading/buildtools/student_symbols.py) into
/// `<checker>.kernels`, beside the checker. The names CUPTI reports are the same mangled names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace workbook {

/// \brief What one recording saw.
struct LaunchRecord {
    std::vector<std::string> kernels;     ///< mangled names of the kernels launched, in order
    std::size_t device_to_host_bytes = 0; ///< bytes copied, or managed memory migrated, device to host
    /// Kernels that were still running after the call had returned and the default stream had
    /// drained: they ran on a stream the default stream does not wait for.
    std::vector<std::string> still_running;
    std::string unavailable;  ///< why nothing could be recorded (CUPTI held by another tool), or ""
    /// Kernels that started after the previous call had returned and before this one began: a
    /// thread of the student's (or a stream nobody waited for) launched them between calls.
    std::vector<std::string> after_return;
    double after_return_ms = 0;  ///< how long after the previous call returned the first of them started
    /// How long the GPU was still running work of the process that ran the call after that call
    /// returned, measured by the judge once that process was paused (0: it was idle at once).
    double left_running_ms = 0;
    /// Bytes of page-locked host memory (cudaHostAlloc, cudaMallocHost, cudaHostRegister) that
    /// the student's code held at any moment of the call: kernels read and write such memory in
    /// place, so the CPU could do a device function's work there.
    std::size_t pinned_bytes = 0;
    /// CPU time the processes that ran the call took meanwhile, in milliseconds, read by the
    /// judge from /proc where the call ran in another process (0 otherwise), and the call's time
    /// on the judge's clock: a call whose work the CPU did shows there whatever it launched.
    double host_cpu_ms = 0;
    double call_ms = 0;  ///< see host_cpu_ms
    /// Whether host_cpu_ms is the call's own: not a first call (which loads the module), nor one
    /// that mapped new arrays, nor one run under a tool.
    bool cpu_counted = false;
};

/// \brief Starts a recording for the judge, through the current Recorder.
/// \snippet common/judge.cu judge
void begin_recording();

/// \brief Ends the judge's recording begun by begin_recording and returns it.
/// \snippet common/judge.cu judge
LaunchRecord end_recording();

/// \brief Where the judge's recordings come from. By default CUPTI in this very process (make
/// bench, whose code is all the workbook's); a checker installs one that asks the runner, the
/// process that holds the student's code (grading/judge/calls.hpp).
struct Recorder {
    std::function<void()> begin;        ///< starts a recording
    std::function<LaunchRecord()> end;  ///< ends it and returns what it saw
};

/// \brief Installs the recorder begin_recording and end_recording use.
/// \param recorder the two functions
void set_recorder(Recorder recorder);

/// \brief Starts recording with CUPTI in this process (CUPTI is set up on first use). Throws
/// std::runtime_error with the reason when CUPTI cannot record here, for example under another
/// profiler.
void cupti_begin_recording();

/// \brief Waits for the GPU, ends the CUPTI recording and returns it.
/// \param drained_marker the mangled name of a kernel launched on the default stream after the
///        recorded call returned, or "": it starts once all the default stream waits for is done,
///        so a kernel that ended after the last of its launches started is listed in
///        still_running (and the marker itself in no list)
LaunchRecord cupti_end_recording(const std::string& drained_marker = "");

/// \brief The path of this very program (from /proc/self/exe): what the list of the student's
/// kernels lies beside, and what a tool runs again as `checker --workbook-probe=NAME`.
std::string this_program();

/// \brief The kernels defined in the student's file of this checker, read once from
/// `<this executable>.kernels`. Throws std::runtime_error when that list is missing.
const std::set<std::string>& student_kernels();

/// \brief A kernel's name for people: demangled, without its parameter list.
/// \param mangled the name as CUPTI reports it
std::string kernel_display_name(const std::string& mangled);

/// \brief Whose a kernel that the student's file does not define probably is: "cuBLAS",
/// "cuDNN", "CUTLASS", "Thrust or CUB" or "the workbook's library".
/// \param mangled the name as CUPTI reports it
std::string kernel_origin(const std::string& mangled);

}  // namespace workbook
