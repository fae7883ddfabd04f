# Negative control of the races inside one kernel: rms_norm sums the partial sums of a
# cluster's blocks through distributed shared memory between two cluster barriers. Here the
# second barrier comes after each block has overwritten its partial sum with the norm factor,
# not before: a block held after the first barrier (a sync-delay copy's hook there) reads a
# sibling's norm factor as its partial sum. Every block still waits for its siblings before it
# leaves (no read of a finished block's memory). Bug class: moe-cluster-sync-dropped.
set(FC_PATCH_MUTANT moe-cluster-sync-dropped)
set(FC_PATCH_WHAT [==[RMSNorm across a cluster: the barrier after thread 0 read every block's partial sum is dropped, so a block overwrites its partial sum with the norm factor (or leaves) while a sibling still reads it: a race inside one kernel]==])
set(FC_PATCH_REAL_WORLD [==[the cluster barrier pair of FlashInfer's rms_norm (trtllm_moe_allreduce_fusion.cuh)]==])
set(FC_PATCH_HEADER trtllm_moe_allreduce_fusion.cuh)
set(FC_PATCH_WHERE "rms_norm, the second cluster.sync() (0.7.4: lines 796 and 801)")
set(FC_PATCH_OLD [==[        acc += *cluster.map_shared_rank(&s_val, i);
      }
    }
    cluster.sync();
  }]==])
set(FC_PATCH_NEW [==[        acc += *cluster.map_shared_rank(&s_val, i);
      }
    }
    // fusioncheck patch moe-cluster-sync-dropped: the barrier moved below the write
  }]==])
set(FC_PATCH_OLD_2 [==[    s_val = rsqrtf(acc / hidden_dim + eps);
  }
  __syncthreads();]==])
set(FC_PATCH_NEW_2 [==[    s_val = rsqrtf(acc / hidden_dim + eps);
  }
  if (cluster.num_blocks() > 1) cluster.sync(); __syncthreads();]==])
