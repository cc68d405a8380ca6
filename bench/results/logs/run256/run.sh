#!/usr/bin/env bash
# run256 (2026-12-03, one H200): `dependent_launch_pays` (memory-bound calls with idle SMs launch serialized) on the
# model map's decode rows (back to back x20, gated): "ours" should now match or beat the "serial" column everywhere;
# then gpu_gemm (the PDL chain test among them). Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests
# --test gpu_gemm && bash bench/pack-libs.sh. Carry [".gpu"].
set -u
for m in 1 16; do
  chk=; [[ $m == 1 ]] && chk=--check
  bash bench/device-run.sh bench gemm --models --filter "M=$m " $chk --host-gate --back-to-back 20 --iters 10 --warmup-ms 200 2>&1 \
    | grep -E "^M=|error|FAIL|panic|^# wrote" | sed -E 's/PASS \(rel_fro_err[^)]*\)?[^[]*/PASS /; s/ +\[host us.*//' | cut -c1-175
done
TEST_TIMEOUT=200 bash bench/device-run.sh tests gpu_gemm > /dev/null 2>&1
grep -hE "^test result|^test .*FAILED$|panicked" "$OUT"/test-logs/*.log | cut -c1-170 | head -12
bash bench/device-run.sh bench gemm --models --filter "M=64 " --host-gate --back-to-back 20 --iters 10 --warmup-ms 200 2>&1 \
  | grep -E "^M=|error|FAIL|panic|^# wrote" | sed -E 's/ +\[host us.*//' | cut -c1-175
