#include "fusioncheck/reference/block_scales.hpp"

#include <stdexcept>
#include <string>

namespace fusioncheck::reference {
namespace {

void need_bytes(std::span<const std::uint8_t> storage, std::size_t bytes, const char* what) {
  if (storage.size() < bytes)
    throw std::invalid_argument(std::string(what) + ": storage of " +
                                std::to_string(storage.size()) + " bytes, the rows need " +
                                std::to_string(bytes));
}

Mismatch nonzero_padding(std::size_t offset, std::uint8_t value, const char* what) {
  return Mismatch{offset, 0.0, static_cast<double>(value), 0.0, what};
}

}  // namespace

std::vector<std::uint8_t> mxfp8_scales_of_rows(Nvfp4Layout layout,
                                               std::span<const std::uint8_t> storage,
                                               std::size_t cols, std::size_t first,
                                               std::size_t rows) {
  need_bytes(storage, nvfp4_scale_storage(layout, first + rows, cols), "mxfp8_scale");
  std::vector<std::uint8_t> out(rows * cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c)
      out[r * cols + c] = storage[nvfp4_scale_index(layout, first + r, c, cols)];
  return out;
}

std::vector<std::uint8_t> group_fp8_exponents_of_rows(std::span<const std::uint8_t> storage,
                                                      std::size_t groups,
                                                      std::size_t tma_aligned_mn, std::size_t first,
                                                      std::size_t rows) {
  if (first + rows > tma_aligned_mn)
    throw std::invalid_argument("group_fp8_scale: rows beyond tma_aligned_mn");
  std::vector<std::uint8_t> out(rows * groups);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t g = 0; g < groups; ++g) {
      const std::size_t at = group_fp8_scale_index(first + r, g, tma_aligned_mn);
      need_bytes(storage, at + 1, "group_fp8_scale");
      out[r * groups + g] = storage[at];
    }
  return out;
}

std::optional<Mismatch> mxfp8_scale_padding_mismatch(Nvfp4Layout layout,
                                                     std::span<const std::uint8_t> storage,
                                                     std::size_t tokens, std::size_t cols) {
  need_bytes(storage, nvfp4_scale_storage(layout, tokens, cols), "mxfp8_scale");
  if (layout != Nvfp4Layout::swizzled128x4) return std::nullopt;  // linear: no padding
  const std::size_t padded_cols = (cols + 3) / 4 * 4;
  for (std::size_t t = 0; t < tokens; ++t)
    for (std::size_t c = cols; c < padded_cols; ++c) {
      const std::size_t at = nvfp4_scale_index(layout, t, c, cols);
      if (storage[at] != 0)
        return nonzero_padding(at, storage[at], "mxfp8_scale padding column (index = byte)");
    }
  return std::nullopt;
}

std::optional<Mismatch> group_fp8_scale_padding_mismatch(std::span<const std::uint8_t> storage,
                                                         std::size_t tokens, std::size_t groups,
                                                         std::size_t tma_aligned_mn) {
  if (tma_aligned_mn < tokens)
    throw std::invalid_argument("group_fp8_scale: tma_aligned_mn < tokens");
  need_bytes(storage, group_fp8_scale_bytes(tokens, groups, tma_aligned_mn), "group_fp8_scale");
  const std::size_t packs = group_fp8_packs(groups);
  for (std::size_t t = 0; t < tokens; ++t)  // after the last group, in its word
    for (std::size_t g = groups; g < packs * 4; ++g) {
      const std::size_t at = group_fp8_scale_index(t, g, tma_aligned_mn);
      if (storage[at] != 0)
        return nonzero_padding(at, storage[at], "group_fp8_scale padding byte (index = byte)");
    }
  for (std::size_t p = 0; p + 1 < packs; ++p)  // the padding tokens' words
    for (std::size_t t = tokens; t < tma_aligned_mn; ++t)
      for (std::size_t b = 0; b < 4; ++b) {
        const std::size_t at = (p * tma_aligned_mn + t) * 4 + b;
        if (storage[at] != 0)
          return nonzero_padding(at, storage[at], "group_fp8_scale padding token (index = byte)");
      }
  return std::nullopt;
}

}  // namespace fusioncheck::reference
