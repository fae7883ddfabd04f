#include "fusioncheck/reference/tensor.hpp"

#include <stdexcept>

namespace fusioncheck::reference {

Tensor::Tensor(DType dtype, std::size_t count) : dtype_(dtype), count_(count) {
  if (dtype == DType::f32) bits32_.assign(count, 0u);
  else bits16_.assign(count, 0u);
}

const void* Tensor::data() const {
  return dtype_ == DType::f32 ? static_cast<const void*>(bits32_.data()) : bits16_.data();
}
void* Tensor::data() {
  return dtype_ == DType::f32 ? static_cast<void*>(bits32_.data()) : bits16_.data();
}

std::span<std::uint16_t> Tensor::bits16() {
  if (dtype_ == DType::f32) throw std::logic_error("Tensor::bits16 on an f32 tensor");
  return bits16_;
}
std::span<const std::uint16_t> Tensor::bits16() const {
  if (dtype_ == DType::f32) throw std::logic_error("Tensor::bits16 on an f32 tensor");
  return bits16_;
}
std::span<std::uint32_t> Tensor::bits32() {
  if (dtype_ != DType::f32) throw std::logic_error("Tensor::bits32 on a 16-bit tensor");
  return bits32_;
}
std::span<const std::uint32_t> Tensor::bits32() const {
  if (dtype_ != DType::f32) throw std::logic_error("Tensor::bits32 on a 16-bit tensor");
  return bits32_;
}

std::uint32_t Tensor::bits_at(std::size_t i) const {
  return dtype_ == DType::f32 ? bits32_.at(i) : bits16_.at(i);
}

void Tensor::set_bits(std::size_t i, std::uint32_t bits) {
  if (dtype_ == DType::f32) bits32_.at(i) = bits;
  else bits16_.at(i) = static_cast<std::uint16_t>(bits);
}

}  // namespace fusioncheck::reference
