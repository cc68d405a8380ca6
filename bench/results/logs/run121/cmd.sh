# run121 (one H200; the pair not lent), main a6203d7 (column rule with TMA-store tiles): the plain table with --check
# and run 120's shapes at the default. Expect all PASS; deepseek-v3 down t2048 ~0.94, qkv t2048 ~0.94, deepseek-v3
# up t2048 ~0.95, o-proj t8192 ~0.98 (128 x 200, unmeasured), the rest as run 119.
set -u
bash bench/device-run.sh bench gemm --check --iters 15 2>&1 | grep -v '^#' | cut -c1-120
bash bench/device-run.sh bench gemm --iters 15 --shape 2048x7168x9216,8192x7168x9216,16384x7168x9216,4096x2880x4096,2048x28672x8192,3000x8192x4096,8192x8192x4096 2>&1 | grep '^shape ' | awk '{print $2, $6, $8, $10}'
cd "$OUT" && ls
