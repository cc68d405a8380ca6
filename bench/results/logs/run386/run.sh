#!/usr/bin/env bash
# run386 (prepared in session 44, run in session 45): branch fixup-batch (238325d), where the split fix-up of
# unswapped tiles with 33-64 accumulators per thread (64 x 128, 128 x 128, 128 x 72-120) loads two slices' groups per
# L2 round trip instead of one (numerically identical: the same sums in the same order). Its base ce5d6ab picks the
# same tiles as main on these shapes (main's later commits move only 224-column picks).
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm (main, .gpu), and
# bash bench/pack-rev.sh fixup-batch .gpu-fb gpu_gemm; rm -rf .gpu-fb/lib .gpu-fb/cupti-include.
# carry [".gpu", ".gpu-fb"]. 1) gpu_gemm on the branch; 2) main against the branch on split defaults of those tiles,
# back to back x20 behind the host gate, two passes (the second reversed), --check in pass 1. Expected: up to one L2
# round trip (~0.5-1 us) less per call where a tile has 3+ slices; within noise at 2.
set -u
GPU_DIR=.gpu-fb TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm
grep -E "^test |test result" "$OUT/test-logs/"*gpu_gemm*.log | grep -v " ok$"
CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh 256x1280x8192,203x1216x6080,244x1248x7872,256x1536x4096,256x5120x27648,384x1024x8192,256x2048x14336,1024x768x8192,512x1024x16384 "--host-gate --back-to-back 20" .gpu .gpu-fb > "$OUT/ab386.log" 2>&1
grep -c PASS "$OUT/ab386.log"
