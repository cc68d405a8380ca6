#!/usr/bin/env bash
# run200 (2026-12-02, one H200): the split fix-up loading 3 slices per L2 round trip on tiles of at most 32
# accumulators per thread (swapped 64 x R, R <= 64), with the host-path change: (1) the GPU GEMM tests (split
# defaults, bit-identical rounds), the fused kernel's one-GPU tests; (2) gated bench (GPU time alone) of small split
# shapes, .gpu-b (the host-path change, the old fix-up) against .gpu (both), alternating, two passes.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm --test gpu_gemm_allreduce
#       && bash bench/pack-libs.sh; .gpu-b as run 199's.
# Call: run with carry [".gpu", ".gpu-b"], bash bench/results/logs/run200/run200.sh
set -u
bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "^ok|passed|failed|panic|FAIL" | tail -20
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm_allreduce --skip swapped_operand_tiles_on_the_epilogue_path \
  --skip paths_interleaved_back_to_back --skip missing_peer_times_out_naming_it --skip calls_queued_behind_a_timeout_do_nothing \
  2>&1 | grep -E "^ok|passed|failed|panic|FAIL" | tail -20
S="512x8x7168,100x8x7168,200x128x7168,1024x8x4096,512x128x4096,2048x8x7168,8x9216x7168,64x4096x14336,4096x64x7168"
for pass in 1 2; do
  for g in .gpu-b .gpu; do
    echo "-- pass $pass $g"
    chk=; [[ $pass == 1 && $g == .gpu ]] && chk=--check
    # shellcheck disable=SC2086
    GPU_DIR=$g bash bench/device-run.sh bench gemm --iters 50 --warmup-ms 200 --no-json --host-gate $chk --shape "$S" 2>&1 \
      | grep -E "^shape|error|panic|FAIL"
  done
done
