/// \file tma.hpp
/// \brief Tensor maps for Hopper's Tensor Memory Accelerator (TMA), built on the host.
///
/// A TMA copy (`cp.async.bulk.tensor`) moves a whole box of a matrix into shared memory on one
/// instruction. It needs a *tensor map*: the matrix's base, sizes and row stride, the box, and
/// the layout in shared memory. Lab 05's steps 3 and 4 both use boxes 32 floats wide (128 bytes)
/// in the 128-byte swizzle, so one function makes them: the driver's `cuTensorMapEncodeTiled`,
/// fetched through the runtime (`cudaGetDriverEntryPointByVersion`), so nothing links `-lcuda`.
#pragma once

#include <cuda.h>  // CUtensorMap and its enums
#include <cuda_bf16.h>

namespace workbook {

/// \brief The tensor map of a row-major `rows x cols` matrix of floats on the device, for boxes
/// of `box_rows` rows by 32 floats stored with the 128-byte swizzle: in each 128-byte row of the
/// box, 16-byte chunk q lands at chunk q ^ (row % 8). Parts of a box outside the matrix arrive
/// as zeros.
/// \param matrix the matrix on the device; TMA needs it 16-byte aligned
/// \param rows its rows (at least 1)
/// \param cols its columns; TMA needs rows that are whole multiples of 16 bytes: a multiple of 4
/// \param box_rows rows of a box, 1 to 256
/// \param promotion how far the L2 widens each of TMA's reads (256 bytes unless told)
/// \throws CudaError when the driver has no cuTensorMapEncodeTiled or refuses the map (the
///         message gives its CUresult and the sizes)
CUtensorMap tensor_map_swizzled(const float* matrix, int rows, int cols, int box_rows,
                                CUtensorMapL2promotion promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B);

/// \brief The same for a row-major matrix of bfloat16: boxes of `box_rows` rows by 64 elements
/// (128 bytes again), in the 128-byte swizzle.
/// \param matrix the matrix on the device, 16-byte aligned
/// \param rows its rows (at least 1)
/// \param cols its columns: a multiple of 8 (rows of whole 16-byte multiples)
/// \param box_rows rows of a box, 1 to 256
/// \param promotion how far the L2 widens each of TMA's reads (256 bytes unless told)
/// \throws CudaError as for floats
CUtensorMap tensor_map_swizzled(const __nv_bfloat16* matrix, int rows, int cols, int box_rows,
                                CUtensorMapL2promotion promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B);

}  // namespace workbook
