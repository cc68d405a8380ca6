#!/usr/bin/env bash
# Run 452 (session 63, one GPU): branch claimed-units after the all-gather went back to dealt
# tiles (2b716de: + the review's proxy fence): the all-gather's and the dispatch's tests (all but one CTA
# pushing; the dispatch's epochs interleaved with checked all-reduces),
# then the MoE benches' tiles on the DeepSeek-like shape (256 experts, top-8; a rank's rows
# read a 58 MB expert B each 256 rows: HBM traffic near the compute time), both benches, every
# dispatch tile, two ranks sharing the GPU (the dispatch only: the session's device time was short).
# Expected: the default 128 x 256 TMA-store tile has 3 stages (2 loads in flight, ~1.5 us of
# lookahead against HBM latency under load); the 4-6-stage tiles 10-25% faster if that is the
# limit, not if the B traffic itself is.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_allgather_gemm --test gpu_moe_dispatch_gemm
# carry [".gpu"], command "bash bench/results/logs/run452/run.sh".
set -u
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_ 2>&1 | grep -E "^ok |^FAIL|passed|failed" | cut -c1-200 | tail -3
for b in moe-dispatch-gemm; do
  for t in wide-tma-store wide narrow narrow-tma-store m64-wide-tma-store; do
    echo "== $b $t"
    timeout 60 bash bench/device-run.sh bench $b --share-gpu --filter deepseek --tile $t --no-json 2>&1 | grep -E "like|rror" | awk '{print substr($0,1,110) " | " substr($0,length($0)-70)}'
  done
done
