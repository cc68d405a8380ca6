#!/usr/bin/env bash
# run381: the two-row-block cluster rule (branch two-row-c2, TileConfig::two_row_blocks_c2_instead_of) as the default.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm (the branch) and
# bash bench/pack-rev.sh 73b9faf .gpu-main (main), rm -rf .gpu-main/lib .gpu-main/cupti-include. carry [".gpu", ".gpu-main"].
# 1) gpu_gemm in full (its new test two_row_blocks_c2_default_matches_reference: 211 x 8136 x 8192, 256 x 8192 x 7168,
# 193 x 8000 x 9216); 2) main against the branch on 10 fresh shapes the rule moves (random, M 193-256, K 7168-20480)
# and Llama-3-70B's 256 x 8192 x 8192 / 14336 / 7168 (each moved by the rule), back to back x20 behind the host gate, two
# passes (the second reversed), --check in pass 1.
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm
grep -E "^test |test result" "$OUT/test-logs/"*gpu_gemm*.log | grep -v " ok$"
CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh 255x6520x20480,255x8056x20480,255x6808x20480,248x7960x12288,211x6088x16384,198x7928x16384,248x7936x7168,244x7472x16384,214x5696x16384,225x7528x20480,256x8192x8192,256x8192x14336,256x8192x7168 "--host-gate --back-to-back 20" .gpu-main .gpu > "$OUT/ab381.log" 2>&1
grep -c PASS "$OUT/ab381.log"
