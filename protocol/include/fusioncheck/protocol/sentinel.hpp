#pragma once
// The Lamport sentinel: a slot holding negative zero of the buffer's element type means
// "not yet written". Every test here is bitwise; float equality cannot tell -0 from +0.
#include <cstdint>

#include "fusioncheck/protocol/hd.hpp"

namespace fusioncheck::protocol {

inline constexpr std::uint16_t kNegZero16 = 0x8000u;      // fp16 and bf16
inline constexpr std::uint32_t kNegZero32 = 0x80000000u;  // fp32

FC_HD constexpr bool is_neg_zero_bits16(std::uint16_t bits) { return bits == kNegZero16; }
FC_HD constexpr bool is_neg_zero_bits32(std::uint32_t bits) { return bits == kNegZero32; }

// Producer side: an input -0 would read as "not yet written", so it is sent as +0.
FC_HD constexpr std::uint16_t canonicalize_bits16(std::uint16_t bits) {
  return bits == kNegZero16 ? std::uint16_t{0} : bits;
}
FC_HD constexpr std::uint32_t canonicalize_bits32(std::uint32_t bits) {
  return bits == kNegZero32 ? std::uint32_t{0} : bits;
}

}  // namespace fusioncheck::protocol
