#include "tma.hpp"

#include "check.hpp"

#include <cuda_runtime.h>

#include <string>

namespace workbook {
namespace {

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

EncodeTiled encode_tiled()
{
    static const EncodeTiled fn = [] {
        void* p = nullptr;
        cudaDriverEntryPointQueryResult found{};
        CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found));
        if (found != cudaDriverEntryPointSuccess || p == nullptr)
            throw CudaError(cudaErrorSymbolNotFound, "the CUDA driver has no cuTensorMapEncodeTiled (TMA needs driver 12.0 or newer)");
        return reinterpret_cast<EncodeTiled>(p);
    }();
    return fn;
}

}  // namespace

// One map for both element types: boxes of 128 bytes a row, box_rows rows, 128-byte swizzle.
static CUtensorMap swizzled_map(CUtensorMapDataType type, int element_bytes, const void* matrix, int rows, int cols,
                                int box_rows, CUtensorMapL2promotion promotion)
{
    CUtensorMap map{};
    const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};  // innermost first
    const cuuint64_t row_stride[1] = {static_cast<cuuint64_t>(cols) * element_bytes};           // in bytes
    const cuuint32_t box[2] = {static_cast<cuuint32_t>(128 / element_bytes), static_cast<cuuint32_t>(box_rows)};
    const cuuint32_t element_strides[2] = {1, 1};
    const CUresult r = encode_tiled()(&map, type, 2, const_cast<void*>(matrix), dims, row_stride, box,
                                      element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, promotion,
                                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);  // outside the matrix: zeros
    if (r != CUDA_SUCCESS)
        throw CudaError(cudaErrorInvalidValue, "cuTensorMapEncodeTiled failed with CUresult " + std::to_string(r) +
                                                   " for a " + std::to_string(rows) + " x " + std::to_string(cols) +
                                                   " matrix, boxes of " + std::to_string(box_rows) + " x " +
                                                   std::to_string(128 / element_bytes) + " elements");
    return map;
}

CUtensorMap tensor_map_swizzled(const float* matrix, int rows, int cols, int box_rows, CUtensorMapL2promotion promotion)
{
    return swizzled_map(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, matrix, rows, cols, box_rows, promotion);
}

CUtensorMap tensor_map_swizzled(const __nv_bfloat16* matrix, int rows, int cols, int box_rows,
                                CUtensorMapL2promotion promotion)
{
    return swizzled_map(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, matrix, rows, cols, box_rows, promotion);
}

}  // namespace workbook
