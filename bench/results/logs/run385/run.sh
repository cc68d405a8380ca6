#!/usr/bin/env bash
# run385 (prepared in session 44, not yet run): TileConfig::half_width_c2_instead_of (NOTES 46.6) as the default.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm (main with the rule) and
# bash bench/pack-rev.sh 5806a88 .gpu-main (main before it), rm -rf .gpu-main/lib .gpu-main/cupti-include.
# carry [".gpu", ".gpu-main"]. 1) gpu_gemm in full (half_width_c2_default_matches_reference: 250 x 14296 x 4096, 201 x
# 14328 x 6144, 256 x 28600 x 8192); 2) the old default against the new on shapes it moves (Llama-3's 256 x 14336 x
# 4096 / 8192 and 256 x 28672 x 4096 / 8192, and fresh M / N / K: 199 x 14400 x 5120, 231 x 14600 x 12288, 212 x 28800
# x 6144, 247 x 14336 x 14336), back to back x20 behind the host gate, two passes (the second reversed), --check in
# pass 1. Then python3 bench/ab-table.py "$OUT/ab385.log".
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm
grep -E "^test |test result" "$OUT/test-logs/"*gpu_gemm*.log | grep -v " ok$"
CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh 256x14336x4096,256x14336x8192,256x28672x4096,256x28672x8192,199x14400x5120,231x14600x12288,212x28800x6144,247x14336x14336 "--host-gate --back-to-back 20" .gpu-main .gpu > "$OUT/ab385.log" 2>&1
grep -c PASS "$OUT/ab385.log"
