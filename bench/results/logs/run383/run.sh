#!/usr/bin/env bash
# run383: the one-wave-cols rule at two row blocks above K = 14336 (branch one-wave-long-k) as the default.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm (the branch) and
# bash bench/pack-rev.sh 8e11e8a .gpu-main (main: the two-row-block cluster rule), rm -rf .gpu-main/lib
# .gpu-main/cupti-include. carry [".gpu", ".gpu-main"]. 1) gpu_gemm in full (one_wave_cols_default_matches_reference
# has 211 x 6088 x 16384 on 96 columns); 2) main against the branch on 10 fresh shapes the rule moves (random, M
# 193-256, K 14400-20480, 88-112 columns), back to back x20 behind the host gate, two passes (the second reversed),
# --check in pass 1.
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm
grep -E "^test |test result" "$OUT/test-logs/"*gpu_gemm*.log | grep -v " ok$"
CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh 231x7288x20480,208x6904x14400,252x6952x14400,236x5992x17408,199x6872x16384,227x5672x16384,225x6712x14400,221x5816x17408,201x6872x16384,193x6888x18432 "--host-gate --back-to-back 20" .gpu-main .gpu > "$OUT/ab383.log" 2>&1
grep -c PASS "$OUT/ab383.log"
