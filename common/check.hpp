/// \file check.hpp
/// \brief CUDA error checking that names the failing call, its file:line, and a hint.
///
/// Every CUDA runtime call in the workbook goes through CUDA_CHECK. A failure throws
/// workbook::CudaError instead of aborting, so a doctest checker turns it into a failed test
/// with a readable message, and the other tests still run.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace workbook {

/// \brief An error reported by the CUDA runtime, carrying the error code.
///
/// what() reads like "vector_add.cu:42: cudaMemcpy(...) failed: an illegal memory access
/// was encountered (cudaErrorIllegalAddress). Hint: ...".
class CudaError : public std::runtime_error {
public:
    /// \brief Wraps a CUDA error code and the full message.
    /// \param code the error the runtime returned
    /// \param message the text what() returns
    CudaError(cudaError_t code, const std::string& message)
        : std::runtime_error(message), code_(code) {}

    /// \brief The CUDA error code.
    cudaError_t code() const { return code_; }

private:
    cudaError_t code_;
};

/// \brief Whether an error leaves the CUDA context unusable (a "sticky" error).
///
/// After an illegal address, a trap or a launch timeout, every later CUDA call in the process
/// fails too; only a new process gets a working GPU again.
/// \param code the error to classify
/// \snippet common/tests/test_common.cpp errors
bool is_sticky(cudaError_t code);

/// \brief Whether CUDA_CHECK has met a sticky error in this process: the context is gone.
/// \snippet common/tests/test_common.cpp throw
bool sticky_error_seen();

/// \brief A one-line hint that tells a student where to look for the cause of an error.
/// \param code the error to explain
/// \return a sentence, or an empty string when there is nothing useful to add
/// \snippet common/tests/test_common.cpp errors
const char* hint_for(cudaError_t code);

/// \brief Builds the message for a failed call and throws CudaError.
/// \param code the error the runtime returned
/// \param call the source text of the call, as written
/// \param file the source file of the call
/// \param line the line of the call
/// \snippet common/tests/test_common.cpp throw
[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line);

/// \brief Throws CudaError when code is not cudaSuccess. Use it through CUDA_CHECK.
/// \param code the value a CUDA runtime call returned
/// \param call the source text of the call
/// \param file the source file of the call
/// \param line the line of the call
///
/// \snippet solutions/01_vector_add/vector_add.cu host
inline void check_cuda(cudaError_t code, const char* call, const char* file, int line)
{
    if (code != cudaSuccess) throw_cuda_error(code, call, file, line);
}

/// \brief Checks the last kernel launch: the launch itself, then the kernel's execution.
///
/// Calls cudaGetLastError (a bad launch configuration shows here) and then
/// cudaDeviceSynchronize (a fault inside the kernel shows here). Use it through
/// CUDA_CHECK_LAUNCH.
/// \param what the name of the launch, for the message
/// \param file the source file of the launch
/// \param line the line of the launch
/// \snippet common/judge.cu judge
inline void check_launch(const char* what, const char* file, int line)
{
    check_cuda(cudaGetLastError(), what, file, line);
    check_cuda(cudaDeviceSynchronize(), what, file, line);
}

}  // namespace workbook

/// Checks a CUDA runtime call; throws workbook::CudaError naming file:line on failure.
#define CUDA_CHECK(call) ::workbook::check_cuda((call), #call, __FILE__, __LINE__)

/// Checks the launch just made and waits for the kernel, so its faults surface here.
#define CUDA_CHECK_LAUNCH(what) ::workbook::check_launch((what), __FILE__, __LINE__)
