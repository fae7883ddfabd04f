# Upstream's fix reverted (FlashInfer 0.7.2; no upstream PR found): the two-shot barrier of
# 0.7.1 and earlier. Every slot of the block's stride, its own included, is written with a
# release store in index order, so the block's own slot (the one the peer waits on) is written
# first: a peer that passes on it may still see a slot of a block that is not launched now
# holding the flag of two barriers ago, and a later, larger grid passes its barrier early.
# Every release before 0.7.2 fails on it (docs/flashinfer_history.md).
set(FC_PATCH_MUTANT revert-0.7.2-twoshot-barrier-order)
set(FC_PATCH_WHAT [==[two-shot barrier writes the block's own slot first, every slot with release: a larger later grid passes on a slot two barriers old]==])
set(FC_PATCH_REAL_WORLD [==[FlashInfer 0.7.2 fix, reverted]==])
set(FC_PATCH_WHERE "SyncComm::sync (0.7.4: lines 1152-1156)")
set(FC_PATCH_OLD [==[      for (int flag_idx = blockIdx.x + gridDim.x; flag_idx < details::kBarrierFlagCount;
           flag_idx += gridDim.x) {
        st_flag_relaxed(m_target_flag + flag_idx * NRanks, m_flag_value);
      }
      st_flag(m_target_flag + blockIdx.x * NRanks, m_flag_value);]==])
set(FC_PATCH_NEW [==[      // fusioncheck patch revert-0.7.2-twoshot-barrier-order: own slot first, all release
      for (int flag_idx = blockIdx.x; flag_idx < details::kBarrierFlagCount;
           flag_idx += gridDim.x) {
        st_flag(m_target_flag + flag_idx * NRanks, m_flag_value);
      }]==])
