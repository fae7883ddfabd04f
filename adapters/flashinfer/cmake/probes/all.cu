// Compile probe (probes.cmake): every probe at once; when this compiles, no single one runs.
#include "launcher.cu"
#include "params_weight_bias.cu"
#include "pattern_dynamic_fp8.cu"
#include "pattern_block_scaled_fp8.cu"
