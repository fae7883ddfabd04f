#pragma once
// The Eigen CPU reference of the fused allreduce + residual + RMSNorm (+ quantise) call.
#include "fusioncheck/reference/block_scales.hpp"
#include "fusioncheck/reference/element.hpp"
#include "fusioncheck/reference/fused.hpp"
#include "fusioncheck/reference/generators.hpp"
#include "fusioncheck/reference/quant.hpp"
#include "fusioncheck/reference/selfcheck.hpp"
#include "fusioncheck/reference/tensor.hpp"
#include "fusioncheck/reference/tolerance.hpp"
