#pragma once
// A dtype-tagged array of raw element bits: the form in which tensors cross the reference's
// API (copied to and from the GPU as is). 16-bit types are stored as uint16_t, fp32 as
// uint32_t; exactly one of the two vectors is in use.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fusioncheck/reference/element.hpp"

namespace fusioncheck::reference {

class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, std::size_t count);  // zero-filled (+0)

  DType dtype() const { return dtype_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * static_cast<std::size_t>(dtype_bytes(dtype_)); }
  const void* data() const;
  void* data();

  // Typed views; throw std::logic_error on the wrong width.
  std::span<std::uint16_t> bits16();
  std::span<const std::uint16_t> bits16() const;
  std::span<std::uint32_t> bits32();
  std::span<const std::uint32_t> bits32() const;
  // Element type T's storage; T must match dtype() (checked).
  template <DType T> std::span<const typename Element<T>::Bits> view() const {
    if constexpr (T == DType::f32) return bits32();
    else return bits16();
  }
  template <DType T> std::span<typename Element<T>::Bits> view() {
    if constexpr (T == DType::f32) return bits32();
    else return bits16();
  }

  // Element access by index (16-bit bits in the low half). Not for hot loops.
  std::uint32_t bits_at(std::size_t i) const;
  void set_bits(std::size_t i, std::uint32_t bits);
  float value_at(std::size_t i) const { return bits_to_float(dtype_, bits_at(i)); }
  void set_value(std::size_t i, float v) { set_bits(i, float_to_bits(dtype_, v)); }

  friend bool operator==(const Tensor& a, const Tensor& b) = default;  // bitwise

 private:
  DType dtype_ = DType::f32;
  std::size_t count_ = 0;
  std::vector<std::uint16_t> bits16_;
  std::vector<std::uint32_t> bits32_;
};

}  // namespace fusioncheck::reference
