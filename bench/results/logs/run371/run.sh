#!/usr/bin/env bash
# run371: the GPU tests that one H200 can run, on main af5cf1b (session 43's CLI changes; no kernel changed since
# run 362): gpu_gemm, gpu_gemm_allreduce, gpu_barrier, gpu_multiprocess (the two-GPU ones skip, saying why), and the
# CLI's exit status on this machine: 2 for a bad argument, 1 for a failed --check is not provoked. carry [".gpu"].
set -u
TEST_TIMEOUT=420 bash bench/device-run.sh tests gpu_
grep -hE "^test .*(FAILED|ok)$|^SKIP|test result" "$OUT/test-logs/"*.log | sort | uniq -c | sort -rn | head -80
for a in "--tile WIDE" "--shape 8x8x8,8x8x8" "--device 7 --shape 8x8x8"; do
  # shellcheck disable=SC2086
  bash bench/device-run.sh bench gemm --no-json $a > /tmp/cli.log 2>&1; echo "bench gemm $a: rc=$? $(grep -m1 error /tmp/cli.log | cut -c1-120)"
done
