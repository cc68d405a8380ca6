#!/usr/bin/env bash
# run389 (session 45): branch c2-odd-widths. The engine's 2-CTA clusters along M at 72, 88, 104 and 120 columns (each CTA
# loads half of B rounded up to whole 8-row swizzle atoms, the two halves overlapping by 8 rows, written twice with the
# same bytes; the full barrier waits for both shares), and one_wave_cols_c2_instead_of taking them. Pack: gpu-pack
# --bin mkernel -- -p mkernel-tests --test gpu_gemm on the branch (.gpu), bash bench/pack-rev.sh main .gpu-main (51e92d6),
# rm -rf .gpu-main/lib .gpu-main/cupti-include; carry [".gpu", ".gpu-main"].
# 1) main against the branch on 8 shapes the branch moves (run 387 A's and fresh; 72, 88, 104, 120 columns) and 2 it
# does not (96, 112: the engine change on whole halves), back to back x20 behind the host gate, two passes (the second
# reversed), --check in pass 1; 2) gpu_gemm on the branch (the odd widths forced at ragged shapes, and as defaults).
# Expected: 2-5% faster where B's L2 reads were the margin (run 384's twins), minus the 8 rows loaded twice (7-11% of
# the pair's B bytes); even on the two unmoved shapes.
set -u
CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh 254x5304x9216,222x5520x14336,225x6480x8192,245x6664x9216,228x7560x10240,197x7896x10240,213x4744x6656,237x6680x19072,235x6160x14400,206x7248x9088 "--host-gate --back-to-back 20" .gpu-main .gpu > "$OUT/ab389.log" 2>&1
grep -c PASS "$OUT/ab389.log"
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm
grep -E "^test |test result" "$OUT/test-logs/"*gpu_gemm*.log | grep -v " ok$"
