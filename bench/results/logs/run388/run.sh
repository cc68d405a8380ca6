#!/usr/bin/env bash
# run388 (session 45): TileConfig::one_wave_cols_c2_instead_of (NOTES 47.2) as the default. Pack: gpu-pack --bin mkernel
# -- -p mkernel-tests --test gpu_gemm on branch one-wave-c2 (.gpu), bash bench/pack-rev.sh main .gpu-main (main
# before it, b3fbe3f), rm -rf .gpu-main/lib .gpu-main/cupti-include; carry [".gpu", ".gpu-main"].
# 1) gpu_gemm in full (one_wave_cols_c2_default_matches_reference: 200 x 5112 x 6144, 211 x 6088 x 16384, 256 x 6144 x
# 6912, 201 x 7144 x 9216); 2) the old default against the new on fresh shapes it moves (M 193-256, K 6144-19968, 80,
# 96, 112 columns), back to back x20 behind the host gate, two passes (the second reversed), --check in pass 1.
# Expected: 2-6% faster (runs 384, 387 forced).
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm
grep -E "^test |test result" "$OUT/test-logs/"*gpu_gemm*.log | grep -v " ok$"
CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh 209x7216x19200,235x6160x14400,206x7248x9088,255x6328x11968,196x7112x13504,237x6256x11456,241x5944x19968,225x5168x6208,228x5216x6144 "--host-gate --back-to-back 20" .gpu-main .gpu > "$OUT/ab388.log" 2>&1
grep -c PASS "$OUT/ab388.log"
