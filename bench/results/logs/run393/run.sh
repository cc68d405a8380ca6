#!/usr/bin/env bash
# run393 (prepared in session 46, one H200): the column-fitted TMA-store tiles on the fused kernel's epilogue path
# (NOTES 48). Pack on main (after cols-fused merged): ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests
# --test gpu_gemm_allreduce; carry [".gpu"]. (Or fold step 1 into run391's step 3: main's gpu_gemm_allreduce.)
# 1) gpu_gemm_allreduce on one GPU: column_fitted_tiles_on_the_epilogue_path runs its two ranks on GPU 0 (each kernel
#    on half of the SMs: 136-248 columns unclustered, 144-240 in clusters, ragged M/N/K, 20 calls of 2048 x 8192 x
#    4096 on 144-c2, a missing peer); expected as run 371 otherwise: the 4 tests that need two GPUs fail with "1
#    GPU(s) present, 2 needed".
# 2) The tiles' GEMM side inside the fused kernel (--share-gpu: both ranks on GPU 0, the copies go to local memory, so
#    only the compute is compared; N halved so each rank's 66 CTAs take the pair's tiles per CTA): o-proj M=2048 and
#    M=1024, DeepSeek M=2048. Expected: 144 columns within ~2% of the default's time (1.6% less work on the busiest
#    SM at M=2048; 144 ran even or 0.5% slower than 128 x 256 in the plain GEMM, run 219), 168 and 176 even or faster
#    where they cut the busiest SM's columns (M=1024: 168 x 3 waves = 504 against 128 x 4 = 512).
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm_allreduce
grep -E "^test |test result|^ok " "$OUT/test-logs/"gpu_gemm_allreduce-*.log | grep -v " ok$" | head -40
bash bench/device-run.sh bench gemm-allreduce --share-gpu --comm-path epilogue --check --iters 30 --warmup-ms 1500 \
  --shape 2048x4096x4096,1024x4096x4096,2048x3584x9216 \
  --sweep-tiles cols-128x144-tma-store,cols-128x144-tma-store-c2,cols-128x168-tma-store,cols-128x176-tma-store-c2,wide-tma-store-c2 \
  > "$OUT/share393.log" 2>&1
tail -40 "$OUT/share393.log"
