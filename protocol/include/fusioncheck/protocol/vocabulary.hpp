#pragma once
// The shared vocabulary of the fused call, one definition for the reference, the kernels,
// the sim and the harness: element types, output patterns, the NVFP4 scale layout.
// Strings appear only at the command line and in files (names below).
#include <cstdint>
#include <string_view>

#include "fusioncheck/protocol/hd.hpp"

namespace fusioncheck::protocol {

// Element types. Inputs and outputs of the kernels are f16 or bf16; f32 is a Lamport
// buffer element (use_fp32_lamport) and a reference type. The sentinel of a buffer is -0
// of its element type, so its width is the element's (docs/design.md, invariant 6).
enum class DType : std::uint8_t { f16 = 0, bf16 = 1, f32 = 2 };

FC_HD constexpr int dtype_bytes(DType t) { return t == DType::f32 ? 4 : 2; }

constexpr std::string_view dtype_name(DType t) {
  return t == DType::f16 ? "f16" : t == DType::bf16 ? "bf16" : "f32";
}

// What one fused call writes besides the allreduce.
enum class Pattern : std::uint8_t {
  allreduce,         // allreduce_out only
  residual_rmsnorm,  // + residual_out, norm_out
  fp8_static,        // + quant_out (e4m3, code = e4m3(norm * fp8_inv_scale))
  fp8_dynamic,       // + quant_out, scale_out (per token float)
  nvfp4,             // + quant_out (packed e2m1), scale_out (e4m3 block scales); sm_100+
  // Block-scaled FP8 (FlashInfer's kernel; fusioncheck's kernels refuse them):
  mxfp8,      // + quant_out (e4m3), scale_out (ue8m0 per 32 elements, NVFP4's two layouts)
  group_fp8,  // + quant_out (e4m3), scale_out (ue8m0 per token group, packed 4 per word)
};

// The patterns with a quantised output (quant_out).
constexpr bool pattern_quantises(Pattern p) {
  return p != Pattern::allreduce && p != Pattern::residual_rmsnorm;
}

// The block-scaled FP8 patterns: a kernel runs them only where it says so.
constexpr bool pattern_block_scaled_fp8(Pattern p) {
  return p == Pattern::mxfp8 || p == Pattern::group_fp8;
}

// Every pattern, in enum order.
inline constexpr Pattern kAllPatterns[] = {Pattern::allreduce,  Pattern::residual_rmsnorm,
                                           Pattern::fp8_static, Pattern::fp8_dynamic,
                                           Pattern::nvfp4,      Pattern::mxfp8,
                                           Pattern::group_fp8};
// MXFP8: one scale per block of this many elements of a row.
inline constexpr int kMxfp8BlockSize = 32;

constexpr std::string_view pattern_name(Pattern p) {
  switch (p) {
    case Pattern::allreduce: return "allreduce";
    case Pattern::residual_rmsnorm: return "residual_rmsnorm";
    case Pattern::fp8_static: return "fp8_static";
    case Pattern::fp8_dynamic: return "fp8_dynamic";
    case Pattern::nvfp4: return "nvfp4";
    case Pattern::mxfp8: return "mxfp8";
    case Pattern::group_fp8: return "group_fp8";
  }
  return "?";
}

// NVFP4: e2m1 codes, one e4m3 scale per block of 16 elements of a row. The scales of a
// [rows x scale_cols] matrix (scale_cols = hidden / 16) are stored
//   linear:        index = row * scale_cols + col;
//   swizzled128x4: (cuBLAS "1D block scaling factors layout", CUTLASS SfKMajorAtom,
//                  TensorRT-LLM SWIZZLED) rows padded to a multiple of 128, columns to a
//                  multiple of 4; 128x4 tiles of 512 bytes stored row-major over
//                  (row / 128, col / 4); inside a tile the scale at (r, c) =
//                  (row % 128, col % 4) sits at (r % 32) * 16 + (r / 32) * 4 + c.
inline constexpr int kNvfp4BlockSize = 16;
enum class Nvfp4Layout : std::uint8_t { linear, swizzled128x4 };

FC_HD constexpr std::uint64_t nvfp4_scale_storage(Nvfp4Layout layout, std::uint64_t rows,
                                                  std::uint64_t scale_cols) {
  if (layout == Nvfp4Layout::linear) return rows * scale_cols;
  return (rows + 127) / 128 * 128 * ((scale_cols + 3) / 4 * 4);
}

FC_HD constexpr std::uint64_t nvfp4_scale_index(Nvfp4Layout layout, std::uint64_t row,
                                                std::uint64_t col, std::uint64_t scale_cols) {
  if (layout == Nvfp4Layout::linear) return row * scale_cols + col;
  const std::uint64_t tile = (row / 128) * ((scale_cols + 3) / 4) + col / 4;
  const std::uint64_t r = row % 128;
  return tile * 512 + (r % 32) * 16 + (r / 32) * 4 + col % 4;
}

}  // namespace fusioncheck::protocol
