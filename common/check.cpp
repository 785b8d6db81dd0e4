#include "check.hpp"

#include <string>

namespace workbook {

namespace {
bool g_sticky_error_seen = false;
}

bool sticky_error_seen() { return g_sticky_error_seen; }

bool is_sticky(cudaError_t code)
{
    switch (code) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorLaunchTimeout:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
        return true;
    default:
        return false;
    }
}

const char* hint_for(cudaError_t code)
{
    switch (code) {
    case cudaErrorIllegalAddress:
        return "a kernel read or wrote memory outside any buffer: check the bounds test "
               "(if (i < n)) and the index arithmetic; `compute-sanitizer ./checker` names the line";
    case cudaErrorMisalignedAddress:
        return "a kernel used a pointer that is not aligned for its type (a vector load on an "
               "odd offset?)";
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorAssert:
        return "a kernel stopped with a fault (a trap, an assert or an illegal instruction)";
    case cudaErrorLaunchTimeout:
        return "a kernel ran too long: does a loop in it never end?";
    case cudaErrorInvalidConfiguration:
        return "the launch configuration is invalid: more than 1024 threads per block, a block "
               "or grid dimension of 0, or more shared memory than a block may have";
    case cudaErrorInvalidValue:
        return "an argument is invalid: a size, a copy direction, or a null pointer";
    case cudaErrorInvalidDevicePointer:
        return "a pointer passed as device memory is not one (a host pointer, or freed memory?)";
    case cudaErrorMemoryAllocation:
        return "the GPU is out of memory: is another process using it, or is a size wrong?";
    case cudaErrorNoDevice:
        return "no CUDA device found: this machine has no NVIDIA GPU, or its driver is not loaded";
    case cudaErrorInsufficientDriver:
        return "the NVIDIA driver is older than this CUDA toolkit needs: update the driver";
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
        return "the program holds no code this GPU can run: `make clean` and rebuild so CMake "
               "picks this GPU's architecture, or update the driver";
    default:
        return "";
    }
}

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line)
{
    std::string message = std::string(file) + ":" + std::to_string(line) + ": " + call +
                          " failed: " + cudaGetErrorString(code) + " (" + cudaGetErrorName(code) +
                          ")";
    const std::string hint = hint_for(code);
    if (!hint.empty()) message += ". Hint: " + hint;
    if (is_sticky(code)) {
        g_sticky_error_seen = true;
        message += ". This error is sticky: the GPU context is lost for the rest of the process";
    }
    throw CudaError(code, message);
}

}  // namespace workbook
