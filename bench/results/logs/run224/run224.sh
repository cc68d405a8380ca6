#!/usr/bin/env bash
# run224 (2026-12-02): the split fix-up loads up to 24 float4s per thread per round trip (kBatch = 24 / float4s per
# slice, at most 16: 16 slices at 128 x 8, 12 at 128 x 16, 6 at 128 x 32; 64 x 64 keeps 3) against main (3 slices
# per round trip). .gpu-base = main 9bd2b38 (bench/pack-rev.sh HEAD .gpu-base), .gpu = the change. gpu_gemm first
# (the split cases check the sums against the reference), then bench gemm --host-gate on split shapes, the two
# builds alternating, two passes (the first with --check).
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm --test gpu_gemm_allreduce && bash bench/pack-libs.sh
# Call: run with carry [".gpu", ".gpu-base"]
set -u
TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_gemm- > /dev/null 2>&1
grep -hE "^test result|^test .*FAILED$|panicked" $OUT/test-logs/*.log | head -10
shapes=64x8x4096,1024x8x4096,64x8x14336,128x8x9216,256x8x7168,256x16x7168,512x16x4096,256x32x4096,1024x32x7168,8x9216x7168,32x9216x7168,256x256x7168
for pass in 1 2; do
  chk=; [[ $pass == 1 ]] && chk=--check
  echo "== pass $pass"
  for dir in .gpu-base .gpu; do
    echo "-- $dir"
    GPU_DIR=$dir bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 300 --no-json --host-gate $chk --shape $shapes 2>&1 \
      | grep -E "^shape|error|FAIL|panic" | cut -c1-150
  done
done
