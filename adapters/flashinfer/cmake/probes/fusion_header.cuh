#pragma once
// FlashInfer's fusion header, once per probe translation unit (it has no include guard).
#include "flashinfer/comm/trtllm_allreduce_fusion.cuh"
