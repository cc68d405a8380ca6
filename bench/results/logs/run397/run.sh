#!/usr/bin/env bash
# run397 (prepared in session 49, one H200; .gpu = main from 5dd3f21 (the rule as of d1b9645) or later:
# ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_barrier --test gpu_gemm; carry [".gpu"]; ~3 min).
# The fused column rule's other kinds of change (NOTES 52.6), old pair default against new, forced, on per-rank
# stand-ins with the pair's tiles per CTA (M halved for 128-row tiles, N halved for the swapped one), both ranks on
# GPU 0, two passes (the second reversed). Pair shape: old -> new:
#   3072x12288x8192 wide-c2 -> 224-c2 (clustered against clustered: the plain GEMM's pick; unmeasured fused);
#   1536x5120x4096 128 x 128 -> 240-c2; 1024x3584x4096 128 x 128 -> 224-c2; 1536x6912x4096 wide split 2 -> 160-c2;
#   4096x3584x4096 wide split 2 -> 224-c2; 1024x6912x4096 swap-152 -> 216 (N halved: 3456 = 16 x 216 = 27 x 128).
# Expected: the new tile 3-10% faster except against wide-c2 (even to 3%: the model's 3% less work, the cluster on
# both sides).
set -u
export GPU_DIR=.gpu
b() { timeout 100 bash bench/device-run.sh bench gemm-allreduce --share-gpu --comm-path epilogue --check --iters 30 --warmup-ms 1000 --no-json "$@" 2>&1 | grep -E "^shape [0-9]|path tile|error" | cut -c1-330; }
for pass in 1 2; do
  echo "== pass $pass"
  while read -r shape old new; do
    if [[ $pass == 1 ]]; then t=$old,$new; else t=$new,$old; fi
    b --shape "$shape" --sweep-tiles "$t"
  done <<'LIST'
1536x12288x8192 wide-tma-store-c2 cols-128x224-tma-store-c2
768x5120x4096 narrow-tma-store cols-128x240-tma-store-c2
512x3584x4096 narrow-tma-store cols-128x224-tma-store-c2
768x6912x4096 wide-tma-store cols-128x160-tma-store-c2
2048x3584x4096 wide-tma-store cols-128x224-tma-store-c2
1024x3456x4096 swap-ab-128x152-tma-store cols-128x216-tma-store
LIST
done
# Session 50's host changes on the GPU (NOTES 53.2): the GemmRun a call ran is mkernel::plan_gemm's, grid included,
# and gemm's default tile is plan_gemm(.., None)'s (two tests of gpu_gemm, ~40 s).
echo "== plan_gemm against the launch"
TEST_TIMEOUT=200 bash bench/device-run.sh tests gpu_gemm split_rule_default_matches_reference cluster_n_default_matches_reference
