#!/usr/bin/env bash
# run230 (2026-12-02): the split fix-up with 32 float4s in flight where the most slices of a tile need 25-32
# (16 slices at 128 x 16, 8 at 128 x 32: one L2 round trip instead of two): gpu_gemm on the change (also the
# owed check of 802edb7/e6e9983), then base e6e9983 (.gpu-base) against the change (.gpu), host-gated, two passes,
# each pass both binaries back to back (pass 1 --check).
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
#       bash bench/pack-rev.sh e6e9983 .gpu-base
# Call: run with carry [".gpu", ".gpu-base"]
set -u
TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_gemm > /dev/null 2>&1
grep -hE "^test result|^test .*FAILED$|panicked" "$OUT"/test-logs/*.log | head -10
shapes=128x16x9216,256x16x8192,512x16x8192,384x16x14336,256x32x4096,512x32x4096,256x32x7168,64x16x4096,1024x8x4096
for pass in 1 2; do
  chk=; [[ $pass == 1 ]] && chk=--check
  for dir in .gpu-base .gpu; do
    echo "== pass $pass $dir"
    GPU_DIR=$dir bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 300 --no-json --host-gate $chk --shape "$shapes" 2>&1 \
      | grep -E "^shape|error|FAIL|panic" | cut -c1-150
  done
done
