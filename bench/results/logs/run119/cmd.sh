# run119 (one H200; the pair not lent; run 118 had a stale binary): the plain GEMM table at main with the column rule (deepseek-v3 down t2048 ->
# 128 x 176 tiles). Expect ~0.90 of cuBLAS there (0.84 with 128 x 256), all PASS, the rest as run 114.
set -u
bash bench/device-run.sh bench gemm --check --iters 15 2>&1 | grep -v '^#' | cut -c1-120
cd "$OUT" && ls
