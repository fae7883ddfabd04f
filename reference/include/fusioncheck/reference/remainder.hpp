#pragma once
// x % d for a run-time divisor d by multiplications (Barrett reduction), for the generators'
// per-element draws: a 64-bit div costs 20-40 cycles, more than the rest of an element.
//
// Why it is exact, for every 64-bit x and every d >= 1: with m = floor((2^64-1)/d) we have
// 2^64/d - 1 <= m <= 2^64/d, so q = floor(x*m / 2^64) satisfies
//   x/d - 1 < x/d - x/2^64 <= x*m / 2^64 <= x/d,
// i.e. q is floor(x/d) or floor(x/d) - 1. Then x - q*d (<= x, no overflow) lies in [0, 2d)
// and one conditional subtraction gives x mod d. (property_tests/reference/generators_test.cpp
// checks it against % for every modulus the generators use and random divisors.)
#include <cstdint>

namespace fusioncheck::reference {

class FastRemainder {
 public:
  explicit FastRemainder(std::uint64_t d) : d_(d), m_(~std::uint64_t{0} / d) {}
  std::uint64_t divisor() const { return d_; }
  std::uint64_t operator()(std::uint64_t x) const {
    __extension__ using u128 = unsigned __int128;
    const auto q = static_cast<std::uint64_t>((static_cast<u128>(x) * m_) >> 64);
    const std::uint64_t r = x - q * d_;
    return r >= d_ ? r - d_ : r;
  }

 private:
  std::uint64_t d_;
  std::uint64_t m_;
};

}  // namespace fusioncheck::reference
