// The example kernel's steps (steps.hpp, the same functions my_kernel.cu runs) executed on the
// host for N ranks and a sequence of calls, in the kernel's order: every rank pushes, every
// rank clears, then every rank polls and reduces, then the control block advances. The result
// is held to the suite's own checks: the outputs to the reference (bit for bit, the norm
// within its tolerance) and the state a rank's read_state would return to the invariants.
// What this cannot show is the concurrency on a GPU; the mutants show that it sees the
// bookkeeping bugs they stand for.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "fusioncheck/kernels/invariants.hpp"
#include "fusioncheck/reference/generators.hpp"
#include "fusioncheck/reference/tolerance.hpp"
#include "rules.hpp"
#include "steps.hpp"

namespace {

namespace fk = fusioncheck::kernels;
namespace fp = fusioncheck::protocol;
namespace ref = fusioncheck::reference;
using my_kernel::Vec;

struct Call {
  int tokens = 1;
  bool allreduce_only = false;
  bool exact_values = true;
};

struct Sequence {
  int ranks = 2;
  int hidden = 16;
  fk::DType dtype = fk::DType::bf16;
  bool fp32_accumulation = true;
  float weight_bias = 0.0f;
  bool neg_zero = true;
  std::uint64_t seed = 1;
  std::vector<Call> calls;
};

// Every rank's Lamport buffers (16-bit elements) and control block.
struct Ranks {
  std::uint64_t comm_size = 0;
  std::vector<std::vector<std::uint16_t>> lamport;
  std::vector<fp::ControlBlock> control;

  Ranks(int n, std::uint64_t bytes)
      : comm_size(bytes), lamport(static_cast<std::size_t>(n),
                                  std::vector<std::uint16_t>(3 * bytes / 2, fp::kNegZero16)),
        control(static_cast<std::size_t>(n), fp::initial_control_block(bytes)) {}

  std::uint16_t* vec(int rank, int buffer, std::uint64_t index) {
    return lamport[static_cast<std::size_t>(rank)].data() + buffer * (comm_size / 2) + index;
  }
  // What MyKernel::read_state returns for the rank.
  fk::ControlState state(int rank) const {
    fk::ControlState s;
    s.control = control[static_cast<std::size_t>(rank)];
    const auto& words = lamport[static_cast<std::size_t>(rank)];
    s.lamport.resize(words.size() * 2);
    std::memcpy(s.lamport.data(), words.data(), s.lamport.size());
    s.buffer_guards_intact = true;
    s.elem_bytes = 2;
    s.comm_size = comm_size;
    s.ranks = static_cast<int>(control.size());
    return s;
  }
};

Vec read(const std::uint16_t* p) {
  Vec v;
  std::memcpy(v.lane, p, sizeof v.lane);
  return v;
}
void write(std::uint16_t* p, const Vec& v) { std::memcpy(p, v.lane, sizeof v.lane); }

ref::FusedConfig config_of(const Sequence& s, const Call& call) {
  ref::FusedConfig c;
  c.ranks = s.ranks;
  c.tokens = call.tokens;
  c.hidden = s.hidden;
  c.dtype = s.dtype;
  c.accumulation = s.fp32_accumulation ? ref::Accumulation::fp32 : ref::Accumulation::per_step;
  c.weight_bias = s.weight_bias;
  return c;
}

// One rank's outputs of one call, from its own data buffer (steps 5 and 6); false if a
// vector had not landed (on the GPU the poll would wait until its budget ran out).
template <class E, fp::Mutant M>
bool reduce(Ranks& ranks, int a, const my_kernel::Rotation& rot, const Sequence& s,
            const Call& call, const ref::FusedInputs& in, ref::FusedOutputs& out) {
  const std::uint64_t elems = static_cast<std::uint64_t>(call.tokens) * s.hidden;
  out.allreduce = out.residual_out = out.norm_out = ref::Tensor(s.dtype, elems);
  for (int row = 0; row < call.tokens; ++row) {
    float squares = 0.0f;
    for (int v = 0; v < s.hidden / my_kernel::kLanes; ++v) {
      const std::uint64_t i = static_cast<std::uint64_t>(row) * s.hidden + v * my_kernel::kLanes;
      float acc[my_kernel::kLanes];
      for (int r = 0; r < s.ranks; ++r) {
        const Vec x = read(ranks.vec(a, rot.data_buffer, my_kernel::slot_index(r, elems, i)));
        if (!my_kernel::landed<E, M>(x)) return false;
        my_kernel::accumulate<E>(acc, x, r, !s.fp32_accumulation);
      }
      const Vec sum = my_kernel::rounded<E>(acc);
      write(out.allreduce.bits16().data() + i, sum);
      if (call.allreduce_only) continue;
      Vec res;
      squares += my_kernel::add_residual<E>(sum, read(in.residual_in.bits16().data() + i), res);
      write(out.residual_out.bits16().data() + i, res);
    }
    if (call.allreduce_only) continue;
    const float factor = my_kernel::norm_factor(squares, s.hidden, 1e-6f);
    for (int v = 0; v < s.hidden / my_kernel::kLanes; ++v) {
      const std::uint64_t i = static_cast<std::uint64_t>(row) * s.hidden + v * my_kernel::kLanes;
      const Vec g = read(in.gamma.bits16().data() + v * my_kernel::kLanes);
      write(out.norm_out.bits16().data() + i,
            my_kernel::normed<E>(read(out.residual_out.bits16().data() + i), g, factor,
                                 s.weight_bias));
    }
  }
  return true;
}

std::string outputs_problem(const Sequence& s, const Call& call, const ref::FusedInputs& in,
                            const ref::FusedOutputs& got) {
  const ref::FusedConfig c = config_of(s, call);
  const ref::FusedOutputs want = ref::compute_fused(c, in);
  std::optional<ref::Mismatch> m;
  if (call.allreduce_only) {
    m = ref::first_bit_mismatch(want.allreduce, got.allreduce, "allreduce_out");
  } else {
    m = ref::first_bit_mismatch(want.residual_out, got.residual_out, "residual_out");
    if (!m)
      m = ref::first_norm_mismatch(want.norm_out, got.norm_out,
                                   ref::norm_out_tolerance(c, want.residual_out, in.gamma));
  }
  return m ? m->what + " at " + std::to_string(m->index) : "";
}

// The whole sequence; "" when every call passed every check, else the first finding.
template <class E, fp::Mutant M> std::string run(const Sequence& s) {
  std::uint64_t most = 0;
  for (const Call& call : s.calls)
    most = std::max<std::uint64_t>(most, static_cast<std::uint64_t>(call.tokens) * s.hidden);
  Ranks ranks(s.ranks, my_kernel::comm_size_for(s.ranks, most));
  for (std::size_t k = 0; k < s.calls.size(); ++k) {
    const Call& call = s.calls[k];
    const ref::FusedConfig config = config_of(s, call);
    const ref::FusedInputs in =
        call.exact_values ? ref::make_exact_inputs(config, s.seed, k, s.neg_zero)
                          : ref::make_random_inputs(config, {s.seed, k, 24, false, s.neg_zero});
    const std::uint64_t elems = static_cast<std::uint64_t>(call.tokens) * s.hidden;
    std::vector<fk::ControlState> before;
    for (int a = 0; a < s.ranks; ++a) before.push_back(ranks.state(a));
    const fp::ControlBlock& cb = ranks.control[0];  // the same on every rank (invariant 3)
    const my_kernel::Rotation rot = my_kernel::rotation<M>(cb.flag, cb.clear_size, s.ranks, elems);
    for (int a = 0; a < s.ranks; ++a)  // step 3
      for (std::uint64_t i = 0; i < elems; i += my_kernel::kLanes) {
        const Vec x = my_kernel::pushed<M>(
            read(in.rank_inputs[static_cast<std::size_t>(a)].bits16().data() + i));
        for (int b = 0; b < s.ranks; ++b)
          write(ranks.vec(b, rot.data_buffer, my_kernel::slot_index(a, elems, i)), x);
      }
    for (int a = 0; a < s.ranks; ++a)  // step 4
      for (std::uint64_t i = 0; i < rot.clear_elems; i += my_kernel::kLanes)
        write(ranks.vec(a, rot.clear_buffer, i), my_kernel::sentinel_vec());
    std::vector<std::vector<std::uint16_t>> inputs;
    for (const auto& t : in.rank_inputs) inputs.emplace_back(t.bits16().begin(), t.bits16().end());
    for (int a = 0; a < s.ranks; ++a) {  // steps 5 and 6, then the checks of the case runner
      ref::FusedOutputs out;
      if (!reduce<E, M>(ranks, a, rot, s, call, in, out))
        return "hang: rank " + std::to_string(a) + ", call " + std::to_string(k);
      if (const std::string p = outputs_problem(s, call, in, out); !p.empty())
        return "reference: rank " + std::to_string(a) + ", call " + std::to_string(k) + ": " + p;
    }
    for (auto& control : ranks.control) {  // step 7
      control.flag = rot.next_flag;
      control.clear_size = rot.next_clear_size;
    }
    for (int a = 0; a < s.ranks; ++a) {
      const auto found = fk::check_oneshot_rank_invariants(a, before[static_cast<std::size_t>(a)],
                                                           ranks.state(a), inputs, s.dtype);
      if (!found.empty()) return "call " + std::to_string(k) + ": " + found.front();
    }
  }
  return "";
}

template <fp::Mutant M> std::string run_any(const Sequence& s) {
  return s.dtype == fk::DType::bf16 ? run<my_kernel::Bf16, M>(s) : run<my_kernel::F16, M>(s);
}

rc::Gen<Sequence> sequences() {
  return rc::gen::exec([] {
    Sequence s;
    s.ranks = *rc::gen::element(2, 4, 8, 16);
    s.hidden = 16 * *rc::gen::inRange(1, 33);
    s.dtype = *rc::gen::element(fk::DType::bf16, fk::DType::f16);
    s.fp32_accumulation = *rc::gen::arbitrary<bool>();
    s.weight_bias = *rc::gen::element(0.0f, 1.0f);
    s.seed = *rc::gen::inRange<std::uint64_t>(1, 1u << 30);
    const int n = *rc::gen::inRange(1, 7);
    for (int k = 0; k < n; ++k)
      s.calls.push_back({*rc::gen::inRange(1, 9), *rc::gen::arbitrary<bool>(),
                         *rc::gen::weightedElement<bool>({{3, true}, {1, false}})});
    return s;
  });
}

TEST(Emulation, CallSequencesPassTheReferenceAndTheInvariants) {
  EXPECT_TRUE(rc::check("the example kernel's steps, host emulation", [] {
    const Sequence s = *sequences();
    const std::string found = run_any<fp::Mutant::none>(s);
    RC_ASSERT(found == "");
  }));
}

// Calls that shrink, then grow: each clear must cover what the previous call wrote.
Sequence shrinking() {
  Sequence s;
  s.hidden = 64;
  s.calls = {{8}, {3}, {1}, {5}, {2}};
  return s;
}

TEST(Emulation, MutantsAreSeen) {
  ASSERT_EQ(run_any<fp::Mutant::none>(shrinking()), "");
  // The buffer the next call pushes into is cleared instead of the previous one.
  EXPECT_NE(run_any<fp::Mutant::wrong_clear_buffer>(shrinking()).find("invariant 5"),
            std::string::npos);
  // A shrinking call clears only its own size: what the previous call wrote past it stays.
  EXPECT_NE(run_any<fp::Mutant::clear_size_current>(shrinking()).find("invariant 5"),
            std::string::npos);
  // Exact inputs hold zeros: a pushed +0 never "lands" for a float test, -0 never for any.
  EXPECT_NE(run_any<fp::Mutant::float_sentinel>(shrinking()).find("hang"), std::string::npos);
  EXPECT_NE(run_any<fp::Mutant::no_canonicalize>(shrinking()).find("hang"), std::string::npos);
  Sequence without_neg_zero = shrinking();  // control: nothing for no-canonicalize to break
  without_neg_zero.neg_zero = false;
  EXPECT_EQ(run_any<fp::Mutant::no_canonicalize>(without_neg_zero), "");
}

}  // namespace
