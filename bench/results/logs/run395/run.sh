#!/usr/bin/env bash
# run395 (prepared in session 48, one H200): branch one-wave-wide-c2, where at two row blocks (M 193-256) above K =
# 14336 the one-wave column tiles of 176-224 columns (the long-K rule's, in place of 128 x 256: run 391) become their
# 2-CTA twins, as 80-120 did (`one_wave_cols_c2_instead_of`). Run 390 had 192, 208 and 224 in clusters 1-2% faster,
# forced; 176, 184, 200 and 216 (184, 200 and 216 with overlapping halves of B) never timed in clusters here.
# Pack: git checkout one-wave-wide-c2 && ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm
# (.gpu; then git checkout main), bash bench/pack-rev.sh main .gpu-main; rm -rf .gpu-main/lib .gpu-main/cupti-include;
# carry [".gpu", ".gpu-main"].
# As run (session 49, from main's tree): main in .gpu (gpu-pack), the branch in .gpu-wc2 (bash bench/pack-rev.sh
# one-wave-wide-c2 .gpu-wc2 gpu_gemm; lib and cupti-include removed); carry [".gpu", ".gpu-wc2"].
# 1) main against the branch on fresh shapes (176, 184, 200, 216, 224, 176, 200, 192 columns), back to back x20
# behind the host gate, two passes (the second reversed), --check in pass 1; 2) gpu_gemm on the branch
# (one_wave_cols_c2_default_matches_reference: 233 x 11888 x 16256 on 184-c2, 242 x 14000 x 18432 on 216-c2).
# Expected: 1-2% faster at every width (run 390); the overlapping halves (184, 200, 216) within that or even.
set -u
CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh 236x11400x15360,250x12000x16384,205x12800x18432,256x13824x15360,230x14600x17408,222x11600x19456,248x13104x16384,213x12352x20480 "--host-gate --back-to-back 20" .gpu .gpu-wc2 > "$OUT/ab395.log" 2>&1
grep -c PASS "$OUT/ab395.log"
TEST_TIMEOUT=300 GPU_DIR=.gpu-wc2 bash bench/device-run.sh tests gpu_gemm
grep -hE "^test |test result" "$OUT/test-logs/"*gpu_gemm*.log | grep -v " ok$"
