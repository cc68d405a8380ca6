#!/usr/bin/env bash
# run391 (prepared in session 45): branch one-wave-wide-long-k, where the one-wave-cols rule above K = 14336 at two row
# blocks (M 193-256) also replaces 128 x 256 TMA-store tiles filling more than two thirds of one wave (176-224 columns
# on 132 SMs, N = 11272-14784; before, 128 x 256 unsplit in 89-116 tiles). Run it after (or instead of) run390, which
# times the same widths forced on main. Pack: git checkout one-wave-wide-long-k && ../shared/tools/gpu-pack --bin mkernel
# -- -p mkernel-tests --test gpu_gemm (.gpu; then git checkout main), bash bench/pack-rev.sh main .gpu-main gpu_gemm_allreduce, rm -rf
# .gpu-main/lib .gpu-main/cupti-include; carry [".gpu", ".gpu-main"].
# 1) main against the branch on fresh shapes it moves (and 204 x 15736 x 14912, which it leaves: 240 columns cut less
# than an eighth), back to back x20 behind the host gate, two passes (the second reversed), --check in pass 1;
# 2) gpu_gemm on the branch (one_wave_cols_default_matches_reference: 233 x 11888 x 16256 on 184 columns).
# Expected: faster about in proportion to the busiest SM's cut (12-31%) where it is >= 12%.
# 0) run390's forced widths on main (GPU_DIR=.gpu-main), so that one machine start serves both (then run390 need not run).
set -u
# Session 48: two device calls, the fused half first (never-run GPU code): `run.sh fused`, then `run.sh gemm`.
part=${1:-all}
if [[ $part != fused ]]; then
GPU_DIR=.gpu-main bash bench/results/logs/run390/run.sh
CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh 233x11888x16256,256x12288x16384,246x11824x14784,224x13312x20480,242x14000x18432,247x14280x20288,256x14336x16384,199x11328x17408,215x12840x19456 "--host-gate --back-to-back 20" .gpu-main .gpu > "$OUT/ab391.log" 2>&1
grep -c PASS "$OUT/ab391.log"
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm
grep -E "^test |test result" "$OUT/test-logs/"gpu_gemm-*.log | grep -v " ok$"
fi
[[ $part == gemm ]] && exit 0
# 3) main's one-GPU fused tests: session 45 merged the split fix-up's batching (fixup-batch), which the fused kernel's
# epilogue path compiles too, and no gpu_gemm_allreduce test ran since; session 46 added the column-fitted tiles to
# the epilogue path (NOTES 48) with column_fitted_tiles_on_the_epilogue_path, whose two ranks share GPU 0 here
# (expected: 12 pass, the 4 that need two GPUs fail with "1 GPU(s) present, 2 needed").
GPU_DIR=.gpu-main TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm_allreduce
grep -E "^test |test result" "$OUT/test-logs/"gpu_gemm_allreduce-*.log | grep -v " ok$"
# 4) (NOTES 48.4) the column-fitted tiles' GEMM side inside the fused kernel: both ranks on GPU 0 (--share-gpu; the
# copies go to local memory), N halved so each rank's 66 CTAs take the pair's tiles per CTA. Expected: 144 columns
# within ~2% of the default at 2048 x 4096 x 4096 (1.6% less work on the busiest SM); 168 at M=1024 even or faster.
GPU_DIR=.gpu-main bash bench/device-run.sh bench gemm-allreduce --share-gpu --comm-path epilogue --check --iters 30 \
  --warmup-ms 1500 --shape 2048x4096x4096,1024x4096x4096,2048x3584x9216 \
  --sweep-tiles cols-128x144-tma-store,cols-128x144-tma-store-c2,cols-128x168-tma-store,cols-128x176-tma-store-c2,wide-tma-store-c2 \
  > "$OUT/share391.log" 2>&1
tail -40 "$OUT/share391.log"
