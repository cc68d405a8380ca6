# run117 (2x H200): the issue-3 figures at main (measure: gemm --check, fused --check --check-reps 100 in both modes,
# traces), then decode / mid-M fused shapes with --check-reps 20.
# Expect: M=2049 fused ~0.235 ms (run 108: 0.259); DeepSeek M=1024 fitted 152 rows (unmeasured fused; plain 0.193);
# deepseek-v3 down t2048 plain ~0.90 of cuBLAS (cols 176); M=128 ~0.046, M=256 ~0.060; the rest as run 108.
set -u
bash bench/device-run.sh measure 2>&1 | tail -8
bash bench/device-run.sh bench gemm-allreduce --check --check-reps 20 --iters 30 --shape 1x8192x4096,32x8192x4096,128x8192x4096,256x8192x4096,256x7168x9216,128x8192x14336,300x8192x4096,520x8192x4096,777x8192x4096,1000x8192x4096,2049x8192x14336,2049x7168x9216,5000x8192x4096 2>&1 | grep -v '^#' | cut -c1-250
cd "$OUT" && tar czf logs.tgz bench.log *.json traces.tgz 2>/dev/null; ls
