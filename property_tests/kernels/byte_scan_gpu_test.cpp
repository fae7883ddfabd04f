// DeviceByteScanner (kernels/byte_scan.hpp) against the plain host answer: every byte zero
// gives the range's size; a planted byte anywhere (the unaligned head, the 16-byte words, the
// tail) is found with its value, and of two the lower. Skips (visibly) without a device.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "fusioncheck/kernels/byte_scan.hpp"

namespace fk = fusioncheck::kernels;

namespace {

class ByteScanGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) GTEST_SKIP() << "no usable CUDA device";
    ASSERT_EQ(cudaMalloc(&device_, kBytes), cudaSuccess);
    scanner_ = std::make_unique<fk::DeviceByteScanner>();  // allocates: only with a device
  }
  void TearDown() override {
    scanner_.reset();
    if (device_ != nullptr) cudaFree(device_);
  }
  // Uploads `host` to the allocation and scans [offset, offset + bytes).
  fk::ByteScan scan(const std::vector<std::uint8_t>& host, std::uint64_t offset,
                    std::uint64_t bytes) {
    EXPECT_EQ(cudaMemcpy(device_, host.data(), kBytes, cudaMemcpyHostToDevice), cudaSuccess);
    return scanner_->first_nonzero(static_cast<std::uint8_t*>(device_) + offset, bytes, nullptr);
  }
  static constexpr std::uint64_t kBytes = (1u << 20) + 77;
  void* device_ = nullptr;
  std::unique_ptr<fk::DeviceByteScanner> scanner_;
};

}  // namespace

TEST_F(ByteScanGpu, AllZeroGivesTheSize) {
  const std::vector<std::uint8_t> zero(kBytes, 0);
  for (std::uint64_t offset : {0u, 3u, 16u}) {
    const fk::ByteScan s = scan(zero, offset, kBytes - offset);
    EXPECT_EQ(s.first_nonzero, kBytes - offset) << "offset " << offset;
  }
  EXPECT_EQ(scan(zero, 5, 0).first_nonzero, 0u);
}

TEST_F(ByteScanGpu, APlantedByteIsFoundWhereverItLies) {
  for (std::uint64_t offset : {0u, 3u, 13u})
    for (std::uint64_t at :
         std::vector<std::uint64_t>{0, 1, 12, 40, 4097, kBytes - offset - 2, kBytes - offset - 1}) {
      std::vector<std::uint8_t> host(kBytes, 0);
      host[offset + at] = 0x80;
      const fk::ByteScan s = scan(host, offset, kBytes - offset);
      EXPECT_EQ(s.first_nonzero, at) << "offset " << offset << " at " << at;
      EXPECT_EQ(s.value, 0x80) << "offset " << offset << " at " << at;
    }
}

TEST_F(ByteScanGpu, OfTwoTheLowerWinsAndBytesBeforeTheRangeDoNotCount) {
  std::vector<std::uint8_t> host(kBytes, 0);
  host[2] = 0x11;           // before the range
  host[100000] = 0x22;      // the lower of the two in it
  host[kBytes - 1] = 0x33;  // the tail
  const fk::ByteScan s = scan(host, 7, kBytes - 7);
  EXPECT_EQ(s.first_nonzero, 100000u - 7);
  EXPECT_EQ(s.value, 0x22);
}
