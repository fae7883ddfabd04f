#pragma once
// The MoE part of FlashInfer's MoE allreduce fusion
// (flashinfer/comm/trtllm_moe_allreduce_fusion.cuh): what each rank reduces its experts' outputs to
// before the allreduce. The result is the rank's allreduce input; everything after it (allreduce,
// residual, RMSNorm) is fused.hpp's.
//
// For element j of token t, with T the element type, float(.) exact widening and every T(.) a
// round to nearest even (a T add is __hadd, correctly rounded, as T(float(a) + float(b))):
//
//   reduction (moereduction_allreduce_fusion): E active experts, x_e their outputs
//     [E][tokens][hidden], s_e,t fp32 scales [E][tokens], fc2 the token input [tokens][hidden]:
//       acc = +0;  acc = T(float(acc) + float(T(float(x_e[t][j]) * s_e,t)))   for e = 0..E-1
//       acc = T(float(acc) + float(fc2[t][j]))
//   finalize (moefinalize_allreduce_fusion): top_k K, p = index[t][k] the permuted row of the
//     token's k-th expert (-1: not routed to this rank), rows [rows][hidden], scales w[t][k] in T:
//       acc = +0;  for k = 0..K-1 with p != -1:
//         with scales:    acc = T(float(acc) + float(T(float(rows[p][j]) * float(w[t][k]))))
//         without them:   acc = T(float(acc) + float(rows[p][j]))
//       acc = T(float(acc) * routed_scaling)        only when routed_scaling != 1
//       acc = T(float(acc) + float(shared[t][j]))   only with a shared expert output
//   Both push canonicalize(acc) (-0 -> +0). acc starts at +0 and a sum of two numbers is -0 only
//   when both are -0, so acc is never -0 there: the canonicalisation changes nothing.
//
// Inputs are seeded like generators.hpp's, from streams of their own per rank. Exact inputs keep
// every partial result above exact: each term is m * 2^e with the exponent of the token's element
// (the one the other ranks' values of that element share), scales 1 or 2, and |m| small enough
// that a rank's reduced value stays within the exact bound of generators.hpp. Random inputs use
// its values with specials; fp32 scales in (0, 1] with 24 random bits, T scales rounded from
// them. Permuted rows that no token references hold NaN, so that a kernel reading one shows.
#include <cstdint>
#include <vector>

#include "fusioncheck/reference/generator_elements.hpp"
#include "fusioncheck/reference/moe_elements.hpp"
#include "fusioncheck/reference/tensor.hpp"

namespace fusioncheck::reference {

enum class MoeKind : std::uint8_t { reduction, finalize };

inline constexpr int kMaxMoeExperts = 16;     // active experts or top_k
inline constexpr int kMaxMoePaddedRows = 16;  // permuted rows past tokens x top_k

struct MoeConfig {
  MoeKind kind = MoeKind::reduction;
  int experts = 1;              // reduction: active experts; finalize: top_k
  bool expert_scales = true;    // finalize: the per (token, k) scales are given
  bool shared_expert = false;   // finalize: a shared expert output is added
  float routed_scaling = 1.0f;  // finalize: applied once after the routed experts
};

struct MoeInputs {
  Tensor expert_rows;                   // reduction [E][tokens][hidden]; finalize [rows][hidden]
  std::vector<float> reduction_scales;  // reduction [E][tokens]
  Tensor token_rows;                    // reduction fc2; finalize the shared expert output
  std::vector<std::int32_t> permuted_index;  // finalize [tokens][top_k]; -1: not routed here
  Tensor topk_scales;                        // finalize [tokens][top_k], when given
  int rows = 0;                              // finalize: permuted rows (>= referenced ones)
};

// Throws std::invalid_argument for experts outside [1, kMaxMoeExperts], fp32, or a routed
// scaling that is not finite and positive.
void validate(const MoeConfig& moe, DType dtype);

// Which parts make_moe_inputs makes: all, or the small ones (the scales and the routing),
// leaving expert_rows and token_rows empty for a GPU that generates them (moe_elements.hpp).
enum class MoeParts : std::uint8_t { all, small_only };

// One rank's MoE inputs of a call. `exact`: exact inputs (spec.ranks sets the bound), else
// random values with specials (specials.seed / call_index must equal spec's).
MoeInputs make_moe_inputs(const MoeConfig& moe, DType dtype, int tokens, int hidden,
                          const ExactSpec& spec, const SpecialsSpec& specials, bool exact, int rank,
                          MoeParts parts = MoeParts::all);

// What the call's expert and token rows are drawn from, and the stream of one of a rank's
// parts: the arguments of moe_elements' per-element functions.
moe_elements::Draws moe_draws(const MoeConfig& moe, DType dtype, const ExactSpec& spec,
                              const SpecialsSpec& specials, bool exact);
std::uint64_t moe_stream_prefix(const ExactSpec& spec, int rank, moe_elements::Part part);

// The finalize kernel's permuted rows: for each row, the token whose expert output it holds
// (-1: no (token, k) pair references it), from the routing in `in`.
std::vector<int> moe_row_tokens(const MoeConfig& moe, const MoeInputs& in);

// The rank's allreduce input the kernel pushes: [tokens][hidden], canonicalised.
Tensor moe_combine(const MoeConfig& moe, DType dtype, int tokens, int hidden, const MoeInputs& in);

}  // namespace fusioncheck::reference
