#pragma once
// Checks of a call's outputs that the case runner makes beside the reference comparison: the
// hash every rank must agree on (invariant 8), a norm_out canary a pattern without it must
// leave, and the quantised outputs (codes, scales, their layouts' padding and a canary tail).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fusioncheck/gpu/case_runner.hpp"
#include "fusioncheck/gpu/device_buffer.hpp"
#include "fusioncheck/gpu/gpu_case.hpp"
#include "fusioncheck/gpu/row_share.hpp"
#include "fusioncheck/reference/reference.hpp"

namespace fusioncheck::gpu {

// Hash of output bytes for the cross-rank agreement (invariant 8), continuing from `h`.
std::uint64_t hash_bytes(const void* data, std::size_t bytes,
                         std::uint64_t h = 1469598103934665603ull);

// A pattern without norm_out must leave the canary (0xFF bytes) in it.
void report_written_canary(const reference::Tensor& norm_out, int rank, std::uint64_t call_index,
                           const CallSpec& spec, std::vector<Finding>& out);

// The quantised outputs of a call: this rank's share of the codes and scales against the
// reference (first_quant_mismatch, reported through `share_mismatch`), the scale storage's
// padding and the canary tail past it (through `problem`). Returns `agreement` extended by
// what every rank must agree on: the codes, and the scales but NVFP4's (every rank checks all
// of its rows; its layout's padding rows are left out).
std::uint64_t check_quantised(
    const CallSpec& spec, const reference::FusedConfig& whole,
    const reference::FusedConfig& share_config, RowShare share, const DeviceBuffer& quant_out,
    const DeviceBuffer& scale_out, const reference::Tensor& norm_ref,
    const std::vector<float>& allowed,
    const std::function<void(std::optional<reference::Mismatch>)>& share_mismatch,
    const std::function<void(const std::string&)>& problem, std::uint64_t agreement);

}  // namespace fusioncheck::gpu
