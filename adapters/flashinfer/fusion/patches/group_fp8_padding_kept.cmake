# Negative control of the per-token-group FP8 checks: the bytes after a token's last group in
# its packed word are not zeroed (the header's K-padding). A GEMM that reads the whole word
# takes whatever was there as scales. Shows where the groups per row are not a multiple of 4.
set(FC_PATCH_MUTANT group-fp8-padding-kept)
set(FC_PATCH_WHAT [==[per-token-group FP8: the bytes after a token's last group in its packed word are not zeroed]==])
set(FC_PATCH_REAL_WORLD [==[DeepGEMM's packed UE8M0 layout (FlashInfer's K-padding)]==])
set(FC_PATCH_WHERE "write_group_scale, the K-padding (0.7.4: lines 1357-1361)")
set(FC_PATCH_OLD [==[        if (group_idx_in_row == groups_per_row - 1) {
          for (int p = pos + 1; p < 4; p++) {
            reinterpret_cast<uint8_t*>(m_params.scale_out)[elem_idx * 4 + p] = 0;
          }
        }]==])
set(FC_PATCH_NEW [==[        // fusioncheck patch group-fp8-padding-kept: K-padding not zeroed]==])
