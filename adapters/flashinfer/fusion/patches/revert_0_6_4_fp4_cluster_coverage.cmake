# Upstream's fix reverted (FlashInfer 0.6.4, PR 2557): the NVFP4 launch configuration of
# 0.6.0-0.6.3 accepts a cluster size that is not a power of two (hidden 3840: 160 threads x
# 3) and has no coverage check, so halving it for the SM count (3 -> 1) leaves part of every
# row unprocessed. Only the NVFP4 patterns take this path.
set(FC_PATCH_MUTANT revert-0.6.4-fp4-cluster-coverage)
set(FC_PATCH_WHAT [==[NVFP4 launch accepts a cluster size that is not a power of two and has no coverage check: halved for the SM count, part of every row is left unprocessed]==])
set(FC_PATCH_REAL_WORLD [==[FlashInfer PR 2557 (0.6.4), reverted]==])
set(FC_PATCH_WHERE "allreduce_fusion_kernel_launcher, the FP4 block size and the coverage check (0.7.4: lines 1914, 1929-1940)")
set(FC_PATCH_OLD [==[      if (candidate_cluster_size > 8 || !is_power_of_two(candidate_cluster_size)) {
        return false;
      }]==])
set(FC_PATCH_NEW [==[      if (candidate_cluster_size > 8) {  // fusioncheck patch revert-0.6.4-fp4-cluster-coverage
        return false;
      }]==])
set(FC_PATCH_OLD_2 [==[  if (oneshot && threads_per_block * cluster_size != threads_per_token) {
    // Fallback to baseline launch config when FP4 specialization produces
    // an invalid coverage configuration.
    threads_per_block = baseline_threads_per_block;
    cluster_size = baseline_cluster_size;
    adjust_for_sm_count(threads_per_block, cluster_size);
    block_size = threads_per_block;
  }

  FLASHINFER_CHECK(!oneshot || threads_per_block * cluster_size == threads_per_token,
                   "oneshot launch config mismatch: threads_per_block * cluster_size != "
                   "threads_per_token");]==])
set(FC_PATCH_NEW_2 [==[  (void)baseline_threads_per_block;  // fusioncheck patch revert-0.6.4-fp4-cluster-coverage
  (void)baseline_cluster_size;]==])
