#!/usr/bin/env bash
# Run 447 (session 62, one GPU): (1) branch combine-sum-ranges (.gpu-cs: each sum warp a
# contiguous range of group-major units, its entries found once a group) against main (.gpu):
# the combine's tests on the branch, then `bench moe-gemm-combine --share-gpu` interleaved
# (--check on the branch); (2) the attention with conditional rescaling (.gpu-cr) against cuDNN
# (PyTorch SDPA) on the same FLOPs, interleaved, twice (as run 436's interleaved.txt), with branch attn-desc
# (.gpu-desc: on top, the wgmma descriptors advanced by an add), whose ring-attention tests run first.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_moe_gemm_combine --test gpu_ring_attention
#       bash bench/pack-rev.sh attn-cond-rescale .gpu-cr gpu_ring_attention
#       bash bench/pack-rev.sh combine-sum-ranges .gpu-cs gpu_moe_gemm_combine
#       bash bench/pack-rev.sh attn-desc .gpu-desc gpu_ring_attention
# carry [".gpu", ".gpu-cr", ".gpu-cs", ".gpu-desc"], command "bash bench/results/logs/run447/run.sh".
# Expected: tests pass; the combine 0-2% faster (the sum phase, ~5% of the call, loses its
# repeated entry checks); attention at D = 64 now at or past cuDNN (run 436: 0.92-0.97x, run 446: -7-8%);
# attn-desc 2-5% faster at D = 64 (~30 of ~485 instructions a block gone), 0-2% at D = 128.
set -u
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
GPU_DIR=.gpu-cs TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_moe_gemm_combine 2>&1 | grep -E "^ok |^FAIL|^test |panicked|passed|failed|rank [0-9]" | cut -c1-300 | tail -12
c() { local dir=$1; shift; echo "== $dir"; GPU_DIR=$dir timeout 100 bash bench/device-run.sh bench moe-gemm-combine --share-gpu "$@" 2>&1 | grep -E "like|FAIL|rror" | cut -c1-230; }
c .gpu-cs --check
c .gpu --no-json
c .gpu-cs --no-json
c .gpu --no-json
c .gpu-cs --no-json
GPU_DIR=.gpu-desc TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_ring_attention 2>&1 | grep -E "^ok |^FAIL|^test |panicked|passed|failed" | cut -c1-300 | tail -12
a() { GPU_DIR=$1 timeout 120 bash bench/device-run.sh bench ring-attention --share-gpu --iters 20 --warmup 3 --no-json --shape 1x4096x64x8x128,1x4096x64x8x128c,1x8192x16x16x64,1x8192x16x16x64c 2>&1 | grep -E "^shape [0-9]" | cut -c1-60; }
t() { timeout 150 python3 bench/probes/torch_sdpa.py --backend cudnn --iters 40 --shape 1x8192x64x8x128 --shape 1x8192x64x8x128c --shape 1x16384x16x16x64 --shape 1x16384x16x16x64c 2>&1 | tail -6; }
for i in 1 2; do echo "== ours (attn-cond-rescale), pass $i"; a .gpu-cr; echo "== ours (attn-desc), pass $i"; a .gpu-desc; echo "== cuDNN, pass $i"; t; done
