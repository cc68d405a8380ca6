# run114 (one H200; the pair was not lent): main with the mid-M rule (fitted 128-row swapped tiles; working tree of
# 2026-12-01 ~01:00Z, committed right after): gpu_gemm, the plain GEMM table with --check, and the mid-M shapes.
# Expect: 4/4; default = fitted where run 113 measured it faster (M=2049 0.198 ms, M=300 0.036), else unchanged;
# DeepSeek M=1024 (1024x7168x9216) now fitted 152 rows (work 0.89 of 128 x 256: expect ~5% faster, unmeasured).
set -u
TEST_TIMEOUT=200 bash bench/device-run.sh tests gpu_gemm- 2>&1 | tail -3
bash bench/device-run.sh bench gemm --check --iters 15 2>&1 | grep '^shape\|FAIL' | cut -c1-120
bash bench/device-run.sh bench gemm --check --iters 15 --shape 257x8192x4096,300x8192x4096,384x8192x4096,520x8192x4096,640x8192x4096,777x8192x4096,1000x8192x4096,1500x8192x4096,2049x8192x4096,3000x8192x4096,4097x8192x4096,5000x8192x4096,2049x7168x9216,3000x7168x9216,2049x8192x14336,1024x7168x9216 2>&1 | grep '^shape\|FAIL' | cut -c1-120
cd "$OUT" && tar czf logs.tgz bench.log *.json test-logs 2>/dev/null; ls
