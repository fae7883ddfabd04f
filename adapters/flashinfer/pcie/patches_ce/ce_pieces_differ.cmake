# Negative control: rank 0 cuts every chunk into one piece whatever the shape, its peers as
# ce_pick_pieces says; where they take more, the ranks use other flag and landing slots (the
# header: "a rank that picks a different depth uses different flag slots and the group hangs").
set(FC_PATCH_MUTANT ce-pieces-differ)
set(FC_PATCH_HEADER pcie_ipc_ce_ring.cuh)
set(FC_PATCH_WHERE "ce_ring_all_reduce_flat (0.7.4: line 175)")
set(FC_PATCH_OLD [==[  const int pieces = ce_pick_pieces(shard_elems, shard_bytes, kPackElems, pieces_hint);]==])
set(FC_PATCH_NEW [==[  const int pieces =  // fusioncheck patch ce-pieces-differ: rank 0 takes one piece
      rank == 0 ? 1 : ce_pick_pieces(shard_elems, shard_bytes, kPackElems, pieces_hint);]==])
