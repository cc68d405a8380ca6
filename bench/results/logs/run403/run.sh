#!/usr/bin/env bash
# run403 (prepared in session 52, run in session 53 with .gpu packed from main bf0a8fd; one GPU; was branch rs-head-review: store_head_rows sets freed_lo, missing-peer test with
# rank 1 alone at M = 520). Expected: the three reduce-scatter tests named pass (rank 1 alone: PeerTimeout naming
# rank 0 after ~2 s, no trap); then the head row block's cost on a shared GPU: reduce-scatter against all-reduce at
# M = 1040 (S = 520: rank 1's row block 4 is split, 32 head tiles of 128 x 256) and at M = 1024 (none). On a shared GPU
# the reduce-scatter should be at most as slow as the all-reduce at 1024 (half the copies); at 1040 the head tiles
# add up to ~40-50 us to a CTA each (estimate, NOTES 55.2).
set -u
nvidia-smi -L
TEST_TIMEOUT=200 bash bench/device-run.sh tests gpu_gemm_reduce_scatter --nocapture 2>&1 | grep -E "^ok|^FAIL|missing peer|panicked|test result" | cut -c1-300
for shape in 1024x8192x4096 1040x8192x4096; do
  for op in gemm-allreduce gemm-reduce-scatter; do
    timeout 60 bash bench/device-run.sh bench $op --share-gpu --comm-path epilogue --iters 30 --warmup-ms 300 --no-json --shape $shape 2>&1 | grep -E "^shape|rror" | sed "s/^/$op /" | cut -c1-200
  done
done
