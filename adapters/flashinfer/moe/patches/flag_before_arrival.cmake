# Negative control: block 0 of a MoE kernel advances the Lamport flag without waiting until
# every block of the call has read the old one: a late block reads the new flag and pushes into
# the wrong buffer. Bug class: flag-before-arrival (docs/design.md).
set(FC_PATCH_MUTANT flag-before-arrival)
set(FC_PATCH_HEADER trtllm_moe_allreduce_fusion.cuh)
set(FC_PATCH_WHERE "LamportComm::update, the arrival-counter wait (0.7.4: lines 741-742)")
set(FC_PATCH_OLD [==[      while (*reinterpret_cast<int volatile*>(counter_ptr) != gridDim.x) {
      }
      *flag_ptr = (flag_value + 1) % 3;]==])
set(FC_PATCH_NEW [==[      // fusioncheck patch flag-before-arrival: no wait for the other blocks
      *flag_ptr = (flag_value + 1) % 3;]==])
