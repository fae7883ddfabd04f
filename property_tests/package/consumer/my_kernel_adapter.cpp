// Another project's kernel under test, adapted to fusioncheck's interface. Here it wraps
// fusioncheck's own one-shot kernel, which is enough to show that the interface can be
// implemented and the suite linked from outside.
#include "fusioncheck/gpu/kernel_under_test.hpp"

namespace {

class MyKernelAdapter final : public fusioncheck::gpu::KernelUnderTest {
 public:
  explicit MyKernelAdapter(fusioncheck::kernels::Bootstrap& bootstrap) : inner_(bootstrap, {}) {}
  std::string name() const override { return "my kernel (adapter)"; }
  void prepare(std::uint64_t elems, bool fp32_lamport) override { inner_.prepare(elems, fp32_lamport); }
  void launch(const fusioncheck::kernels::FusedParams& p, bool twoshot, cudaStream_t s) override {
    inner_.launch(p, twoshot, s);
  }
  fusioncheck::kernels::ControlState read_state(fusioncheck::kernels::LamportCopy copy) override {
    return inner_.read_state(copy);  // scan_lamport: the default, over the copied buffers
  }
  fusioncheck::kernels::HangRecord hang_record() override { return inner_.hang_record(); }
  void clear_hang_record() override { inner_.clear_hang_record(); }
  void reset() override { inner_.reset(); }

 private:
  fusioncheck::gpu::OurKernels inner_;
};

}  // namespace

int adapter_is_linkable() { return sizeof(MyKernelAdapter) > 0 ? 1 : 0; }
