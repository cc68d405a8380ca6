#!/usr/bin/env bash
# run222 (2026-12-02): the clustered column-fitted rule (TileConfig::cols_c2_instead_of: 176/192/208 columns in
# 2-CTA clusters where they cut the busiest SM's work to <= 99.5% of the clustered wide tile's) and the small-N
# 16-slice cap (N <= 16) as defaults, on one H200: gpu_gemm (new clustered_cols_default_matches_reference and
# split cases), one rank's gemm_allreduce tests, then the rule's picks on 11 shapes not timed before (6 in the 0.99-
# 0.995 band) against the clustered wide tile forced, two passes (gemm-ab.sh: the first with --check).
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm --test gpu_gemm_allreduce && bash bench/pack-libs.sh
set -u
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm > /dev/null 2>&1
grep -hE "^test result|^test .*FAILED$|panicked" $OUT/test-logs/*.log | head -20
WARMUP_MS=200 bash bench/gemm-ab.sh 8192x9216x7168,2048x18432x8192,32768x4096x8192,16384x14336x8192,12288x18432x8192,16384x12288x8192,12288x9216x8192,8192x14336x8192,1024x28672x8192,6144x22016x8192,8192x6144x8192 "" "--tile wide-tma-store-c2"
