#include "fusioncheck/gpu/output_checks.hpp"

#include <fmt/core.h>

#include <cstring>

namespace fusioncheck::gpu {

namespace ref = reference;

// 8 bytes per step, then the tail byte by byte.
std::uint64_t hash_bytes(const void* data, std::size_t bytes, std::uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
  }
  for (; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

void report_written_canary(const ref::Tensor& norm_out, int rank, std::uint64_t call_index,
                           const CallSpec& spec, std::vector<Finding>& out) {
  const auto bits = norm_out.bits16();
  for (std::size_t i = 0; i < bits.size(); ++i)
    if (bits[i] != 0xFFFFu) {
      out.push_back({"reference",
                     fmt::format("rank {} call {} ({}): norm_out element {} was written ({:#06x}) "
                                 "by a pattern that has no norm_out",
                                 rank, call_index, describe(spec), i, bits[i])});
      return;
    }
}

std::uint64_t check_quantised(
    const CallSpec& spec, const ref::FusedConfig& whole, const ref::FusedConfig& share_config,
    RowShare share, const DeviceBuffer& quant_out, const DeviceBuffer& scale_out,
    const ref::Tensor& norm_ref, const std::vector<float>& allowed,
    const std::function<void(std::optional<ref::Mismatch>)>& share_mismatch,
    const std::function<void(const std::string&)>& problem, std::uint64_t agreement) {
  const ref::QuantConfig& q = whole.quant;
  const auto hidden = static_cast<std::size_t>(whole.hidden);
  const auto tokens = static_cast<std::size_t>(whole.tokens);
  std::vector<std::uint8_t> codes(q.nvfp4 ? tokens * hidden / 2 : tokens * hidden);
  quant_out.download(codes.data(), codes.size());
  const std::size_t scale_bytes = scale_out_bytes(spec, whole.hidden);
  std::vector<std::uint8_t> scales;
  if (scale_bytes > 0) {
    scales.resize(scale_bytes + kScaleCanaryTail);
    scale_out.download(scales.data(), scales.size());
    for (std::size_t i = scale_bytes; i < scales.size(); ++i)
      if (scales[i] != 0xFF) {
        problem(
            fmt::format("scale_out byte {} was written ({:#04x}): past the {} bytes of the "
                        "call's scales",
                        i, scales[i], scale_bytes));
        break;
      }
    scales.resize(scale_bytes);
  }
  const std::size_t groups = q.group_fp8 ? hidden / static_cast<std::size_t>(q.group_size) : 0;
  const auto tma = static_cast<std::size_t>(q.tma_aligned_mn);  // reference_config resolved it
  std::optional<ref::Mismatch> padding;
  if (q.mxfp8)
    padding = ref::mxfp8_scale_padding_mismatch(q.mxfp8_layout, scales, tokens,
                                                hidden / ref::kMxfp8BlockSize);
  if (q.group_fp8) padding = ref::group_fp8_scale_padding_mismatch(scales, tokens, groups, tma);
  if (padding)
    problem(fmt::format("{} {} holds {:#04x}, the kernel must zero it", padding->what,
                        padding->index, static_cast<int>(padding->actual)));
  if (share.count > 0) {
    ref::QuantOutputs got;
    const auto first = codes.begin() + static_cast<std::ptrdiff_t>(share.first * hidden);
    const std::vector<std::uint8_t> rows(
        first, first + static_cast<std::ptrdiff_t>(q.nvfp4 ? 0 : share.count * hidden));
    if (q.fp8_static) got.fp8_static = rows;
    if (q.fp8_dynamic) {
      got.fp8_dynamic = rows;
      got.fp8_dynamic_scale.resize(share.count);
      std::memcpy(got.fp8_dynamic_scale.data(), scales.data() + share.first * 4, share.count * 4);
    }
    if (q.nvfp4) {  // all rows (row_share)
      got.nvfp4 = codes;
      got.nvfp4_scale = scales;
    }
    if (q.mxfp8) {
      got.mxfp8 = rows;
      got.mxfp8_scale = ref::mxfp8_scales_of_rows(
          q.mxfp8_layout, scales, hidden / ref::kMxfp8BlockSize, share.first, share.count);
    }
    if (q.group_fp8) {
      got.group_fp8 = rows;
      got.group_fp8_scale =
          ref::group_fp8_exponents_of_rows(scales, groups, tma, share.first, share.count);
    }
    share_mismatch(ref::first_quant_mismatch(share_config, norm_ref, allowed, got));
  }
  agreement = hash_bytes(codes.data(), codes.size(), agreement);
  if (!q.nvfp4) agreement = hash_bytes(scales.data(), scales.size(), agreement);
  return agreement;
}

}  // namespace fusioncheck::gpu
