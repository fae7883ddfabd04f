# Upstream's fix reverted (FlashInfer 0.6.17, PR 3903): the one-shot launcher asks for a
# cluster of 8 blocks on sm_90 and newer without clamping it to the largest cluster the
# device can launch for the kernel (cudaOccupancyMaxPotentialClusterSize). Where that is
# smaller the launch fails; where it is 8 the code is the same.
set(FC_PATCH_MUTANT revert-0.6.17-cluster-clamp)
set(FC_PATCH_WHAT [==[one-shot cluster of 8 blocks not clamped to the largest cluster the device launches]==])
set(FC_PATCH_REAL_WORLD [==[FlashInfer PR 3903 (0.6.17), reverted]==])
set(FC_PATCH_WHERE "allreduce_fusion_kernel_launcher, cluster_size (0.7.4: lines 1855-1860)")
set(FC_PATCH_OLD [==[  // Clamp to the largest cluster the device can launch.
  static const int max_cluster_size =
      GetMaxClusterSize(reinterpret_cast<void const*>(
                            allreduce_fusion_kernel_oneshot_lamport<Pattern, T, NRanks, Fp32Acc>),
                        128);
  int cluster_size = std::min(8, max_cluster_size);]==])
set(FC_PATCH_NEW [==[  int cluster_size = SM >= 90 ? 8 : 1;  // fusioncheck patch revert-0.6.17-cluster-clamp]==])
