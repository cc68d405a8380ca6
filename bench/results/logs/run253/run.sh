#!/usr/bin/env bash
# run253 (2026-12-03): the review mend (short_k_slices' swapped-tile test simplified, same picks) on the GPU:
# gpu_gemm (incl. 760 x 768 x 512 on the 64 x 128 tile, not run before), then bench gemm --check back to back on the
# session's rule shapes, with JSON. Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm
# && bash bench/pack-libs.sh. Call: carry [".gpu"]
set -u
TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_gemm > /dev/null 2>&1
grep -hE "^test result|^test .*FAILED$|panicked" "$OUT"/test-logs/*.log | cut -c1-170 | head -12
bash bench/device-run.sh bench gemm --check --host-gate --back-to-back 20 --iters 20 --warmup-ms 300 \
  --shape 64x8x4096,1x1024x3072,8x1536x3584,30x2048x1536,384x384x3072,640x1024x2048,192x1536x3072,768x768x512,1024x8192x4096 2>&1 \
  | grep -E "^shape|error|FAIL|panic|^#" | sed -E 's/PASS \(rel_fro_err[^)]*\)?/PASS/; s/  \[host us.*//' | cut -c1-190
