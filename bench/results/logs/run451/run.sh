#!/usr/bin/env bash
# Run 451 (session 63, one GPU): branch claimed-units (976aa44: the all-gather's unclustered
# tiles and the dispatch's tiles claimed from a per-call counter, so the push CTAs join the
# GEMM once their pushes are out) against main (.gpu-main, ccb5343):
#   the branch's all-gather, dispatch and combine tests (new cases: all but one CTA pushing);
#   then bench allgather-gemm and moe-dispatch-gemm --share-gpu, main and branch alternated
#   twice (--check on the branch's first pass).
# Expected before the run: 66 instead of 58 CTAs computing a rank once the (local) pushes are
# out: fused times 5-12% lower (all-gather), Mixtral-like dispatch 6.85 -> ~6.1-6.4 ms.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_allgather_gemm --test gpu_moe_dispatch_gemm --test gpu_moe_gemm_combine
#       bash bench/pack-rev.sh main .gpu-main
# carry [".gpu", ".gpu-main"], command "bash bench/results/logs/run451/run.sh".
set -u
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
TEST_TIMEOUT=200 bash bench/device-run.sh tests gpu_ 2>&1 | grep -E "^ok |^FAIL|passed|failed" | cut -c1-200 | tail -5
grep -h -E "panicked|FAILED|push CTAs, chunks of 16 rows|6[0-9] push|4[0-9] push|3[0-9] push" $OUT/test-logs/*.log 2>/dev/null | cut -c1-250 | head -12
for pass in 1 2; do
  chk=""; [[ $pass == 1 ]] && chk="--check"
  for b in allgather-gemm moe-dispatch-gemm; do
    echo "== pass $pass $b main"
    GPU_DIR=.gpu-main timeout 100 bash bench/device-run.sh bench $b --share-gpu --no-json 2>&1 | grep -E "M=|like" | awk '{print substr($0,1,110)}'
    echo "== pass $pass $b branch $chk"
    timeout 120 bash bench/device-run.sh bench $b --share-gpu $chk 2>&1 | grep -E "M=|like|FAIL|rror" | awk '{print substr($0,1,110) " | " substr($0,length($0)-60)}'
  done
done
