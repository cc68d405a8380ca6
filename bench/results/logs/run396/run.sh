#!/usr/bin/env bash
# run396 (session 49, one H200; .gpu = main 840682e (alloc-names and one-wave-wide-c2 merged): bin/mkernel and gpu_barrier; carry [".gpu"]).
# 1) Error::Allocation on the device: a workspace no GPU holds (C alone 256 GiB), expected exit 1 naming the shape,
#    rank 0's symmetric workspace on GPU 0, max_output_elems and the size.
# 2) The fused epilogue path's new column rule (FusedConfig::epilogue_tile, c127191), both ranks on GPU 0 with M
#    halved (each rank's 66 CTAs run the pair's 128-row tiles per CTA; the copies are local, so a larger last wave
#    costs less than on the pair: ~+7 us at DeepSeek M=2048 by the model). Each pair shape's old default and new one
#    forced, next to the share plan's default. Pair shape: old -> new (the model's GEMM saved / extra copy):
#      2048x7168x9216: wide split 2 -> 176-c2 (run 394: 0.4427 -> 0.4130); 2048x7168x4096: the same tiles;
#      4096x2880x4096: narrow -> 240-c2; 1024x6144x4096: wide split 2 -> 192-c2;
#      1024 x {9216, 5120, 2880} x 4096: swapped 152 / 176-c2 / 208 -> 192-c2 / 160-c2 / 184 (swapped tiles at M
#      halved pad M differently: those rows compare the new tile with the share plan's default only).
#    Expected: the new tile 3-8% faster at the first four (GEMM model 5-14% less on the busiest SM).
set -u
export GPU_DIR=.gpu
timeout 60 bash bench/device-run.sh bench gemm-allreduce --share-gpu --iters 1 --shape 131072x1048576x4096 2>&1 | tail -2
b() { timeout 120 bash bench/device-run.sh bench gemm-allreduce --share-gpu --comm-path epilogue --check --iters 30 --warmup-ms 1000 --no-json "$@" 2>&1 | grep -E "^shape [0-9]|path tile|error" | cut -c1-330; }
b --shape 1024x7168x9216,1024x7168x4096 --sweep-tiles wide-tma-store,cols-128x176-tma-store-c2
b --shape 2048x2880x4096 --sweep-tiles narrow-tma-store,cols-128x240-tma-store-c2
b --shape 512x6144x4096 --sweep-tiles wide-tma-store,cols-128x192-tma-store-c2
b --shape 512x9216x4096 --sweep-tiles cols-128x192-tma-store-c2
b --shape 512x5120x4096 --sweep-tiles cols-128x160-tma-store-c2
b --shape 512x2880x4096 --sweep-tiles cols-128x184-tma-store
# 3) pass 2 of the first, reversed sweep order (clocks)
b --shape 1024x7168x9216,1024x7168x4096 --sweep-tiles cols-128x176-tma-store-c2,wide-tma-store
