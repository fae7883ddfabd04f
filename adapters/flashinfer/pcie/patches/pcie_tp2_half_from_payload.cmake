# Negative control: the 2-rank kernel sizes its epoch halves from the current call's payload
# instead of the workspace's max_numel. After a large call, a rank that flipped its epoch stages
# a smaller call inside the region its lagging peer is still draining (or the peer's reset wipes
# fresh data): wrong output or a poll that never ends. Bug class: the header's comment on the
# 2-rank half size (0.7.4: lines 849-855, 2091-2096).
set(FC_PATCH_MUTANT pcie-tp2-half-from-payload)
set(FC_PATCH_HEADER pcie_ipc_all_reduce.cuh)
set(FC_PATCH_WHERE "ipc_tp2_remote_push_kernel (0.7.4: line 870)")
set(FC_PATCH_OLD [==[  int stage_offset = epoch * 2 * params.rank_stride_packs;]==])
set(FC_PATCH_NEW [==[  int stage_offset = epoch * 2 * params.num_packs;  // fusioncheck patch pcie-tp2-half-from-payload]==])
