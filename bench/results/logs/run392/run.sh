#!/usr/bin/env bash
# run392 (prepared in session 45): branch c2-wide-odd, where the column-fitted TMA-store tiles of 136, 152, ..., 248
# columns also get 2-CTA twins (each CTA loads half of B rounded up to whole swizzle atoms, the halves overlapping by 8
# rows, as run 389 timed at 88-120) and `clustered_instead_of` takes them where it took the multiples of 16 (M >= 1024
# with the row blocks in pairs, or two row blocks beyond one wave; K >= 4096). Pack: git checkout c2-wide-odd &&
# ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm (.gpu; then git checkout main), bash
# bench/pack-rev.sh main .gpu-main; rm -rf .gpu-main/lib .gpu-main/cupti-include; carry [".gpu", ".gpu-main"].
# 1) main against the branch on shapes it moves (216, 184, 216, 232, 248, 200, 232, 216 columns), back to back x20
# behind the host gate, two passes (the second reversed), --check in pass 1; 2) gpu_gemm on the branch (the eight
# widths forced at ragged shapes in swapped_operand_tiles_match_reference's column-tile rows).
# Expected: 0.3-5% faster, as clustering the multiples of 16 was (runs 212, 25.2), less the 8 rows loaded twice
# (3-6% of the pair's B bytes).
set -u
CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh 3072x2312x8192,2040x7544x5120,4096x14200x8192,2048x11360x5120,4096x12152x7168,1536x8720x8192,8192x15704x5120,256x27648x5120 "--host-gate --back-to-back 20" .gpu-main .gpu > "$OUT/ab392.log" 2>&1
grep -c PASS "$OUT/ab392.log"
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm
grep -E "^test |test result" "$OUT/test-logs/"*gpu_gemm*.log | grep -v " ok$"
