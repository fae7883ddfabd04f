#pragma once
// The scale storages of the block-scaled FP8 outputs as a kernel writes them (fused.hpp,
// quant.hpp): reading the scales of some rows out of a storage, and finding a byte that
// the layout's padding rules say must be zero. The tolerance checks (first_quant_mismatch)
// take the scales row by row; these read them out of the kernel's layout.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "fusioncheck/reference/quant.hpp"
#include "fusioncheck/reference/tolerance.hpp"

namespace fusioncheck::reference {

// MXFP8: the scales of rows [first, first + rows) of a storage in `layout` holding `cols`
// scales per row, row-major [rows x cols]. Throws std::invalid_argument if the storage is
// smaller than those rows need.
std::vector<std::uint8_t> mxfp8_scales_of_rows(Nvfp4Layout layout,
                                               std::span<const std::uint8_t> storage,
                                               std::size_t cols, std::size_t first,
                                               std::size_t rows);

// Group FP8: the exponents of rows [first, first + rows) of a packed storage (groups per row,
// tma_aligned_mn padded tokens), row-major [rows x groups]. Throws like the above.
std::vector<std::uint8_t> group_fp8_exponents_of_rows(std::span<const std::uint8_t> storage,
                                                      std::size_t groups,
                                                      std::size_t tma_aligned_mn, std::size_t first,
                                                      std::size_t rows);

// The first byte of an MXFP8 scale storage of `tokens` rows that must be zero and is not: in
// the swizzled layout, the padding columns of every written row (padding rows are not
// written: no claim). `index` is the byte's offset in the storage.
std::optional<Mismatch> mxfp8_scale_padding_mismatch(Nvfp4Layout layout,
                                                     std::span<const std::uint8_t> storage,
                                                     std::size_t tokens, std::size_t cols);

// The first byte of a group FP8 scale storage that must be zero and is not: the bytes after
// the last group of each token's last word, and every word of the padding tokens
// [tokens, tma_aligned_mn) in all but the last pack (which has none).
std::optional<Mismatch> group_fp8_scale_padding_mismatch(std::span<const std::uint8_t> storage,
                                                         std::size_t tokens, std::size_t groups,
                                                         std::size_t tma_aligned_mn);

}  // namespace fusioncheck::reference
