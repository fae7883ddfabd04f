# Negative control: the blocks never flip their phase counters (no epoch.flip()): every call
# pushes into the same phase, and a peer that finished a call refills slots this rank still
# drains.
set(FC_PATCH_MUTANT sglang-one-phase)
set(FC_PATCH_HEADER custom_all_reduce.cuh)
set(FC_PATCH_WHERE "the end of both push kernels (0.5.23: lines 211, 320)")
set(FC_PATCH_OLD [==[      ptx::st_global_16B(pos_zero_vec, poll_ptrs[i], vid);
    }
  }

  PDLTriggerSecondary<kUsePDL>();
  __syncthreads();
  epoch.flip();]==])
set(FC_PATCH_NEW [==[      ptx::st_global_16B(pos_zero_vec, poll_ptrs[i], vid);
    }
  }

  PDLTriggerSecondary<kUsePDL>();
  __syncthreads();
  // fusioncheck patch sglang-one-phase: no flip]==])
set(FC_PATCH_OLD_2 [==[      ptx::st_global_16B(pos_zero_vec, poll_ptr, chunk_vecs + j);
    }
  }

  PDLTriggerSecondary<kUsePDL>();
  __syncthreads();
  epoch.flip();]==])
set(FC_PATCH_NEW_2 [==[      ptx::st_global_16B(pos_zero_vec, poll_ptr, chunk_vecs + j);
    }
  }

  PDLTriggerSecondary<kUsePDL>();
  __syncthreads();
  // fusioncheck patch sglang-one-phase: no flip]==])
