#!/usr/bin/env bash
# run212 (2026-12-02): the column-fitted TMA-store tiles in 2-CTA clusters sharing B (cols-128xC-tma-store-c2, new),
# forced, against the default (their unclustered twin) and the clustered wide tile, at sustained clocks, two passes;
# then gpu_gemm (new clustered column-fitted cases, odd row blocks included).
# Expected: as the wide tile's clustered twin (+1.5-3%, NOTES 17.4) and the mid-M swapped ones' (+1.5-2.5%, 17.5):
# 2048 x 7168 x 9216 (270.6 GFLOP; 0.94 of cuBLAS in run 121) -> ~0.96.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], bash bench/results/logs/run212/run212.sh
set -u
export ITERS=20 WARMUP_MS=800
bash bench/gemm-ab.sh "2048x7168x9216,2048x7168x18432" "" "--tile cols-128x176-tma-store-c2" "--tile wide-tma-store-c2"
bash bench/gemm-ab.sh "4096x2880x4096" "" "--tile cols-128x240-tma-store-c2" "--tile wide-tma-store-c2"
bash bench/gemm-ab.sh "4096x3584x7168" "" "--tile cols-128x224-tma-store-c2" "--tile wide-tma-store-c2"
bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "^ok|passed|failed|panic|FAIL" | tail -20
