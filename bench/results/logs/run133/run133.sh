set -u
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv | tee $out/smi.txt
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm_allreduce clustered_tiles oversubscribed split_last_wave fused_matches 2>&1 | tail -40
for m in 16 64 129 192 256; do
  r=$(( (m + 7) / 8 * 8 )); [ $r -lt 8 ] && r=8
  for pass in 1 2; do
    bash bench/device-run.sh bench gemm --check --iters 30 --warmup-ms 400 --shape ${m}x8192x4096,${m}x8192x14336,${m}x7168x9216 --no-json 2>&1 | grep '^shape' | sed "s/^/default p$pass /" | cut -c1-110
    bash bench/device-run.sh bench gemm --check --iters 30 --warmup-ms 400 --shape ${m}x8192x4096,${m}x8192x14336,${m}x7168x9216 --tile swap-ab-64x${r}-tma-store --no-json 2>&1 | grep '^shape' | sed "s/^/tma-st  p$pass /" | cut -c1-110
  done
done
cd $out && tar czf logs.tgz test-logs bench.log 2>/dev/null; ls $out
