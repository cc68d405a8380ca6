#!/usr/bin/env bash
# run254 (2026-12-03, one H200): `bench gemm --models` (new): the TP-sharded linear layers of Llama-3-8B/70B,
# Qwen2.5-32B and DeepSeek-V3's experts and router, ours against cuBLAS, to see where users' shapes stand.
# M <= 256: back to back x20 (as a model's layers run), host-gated, --check; M = 1024: single calls, gated, --check;
# M = 4096: single calls, gated. JSON per part under $OUT.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
set -u
for m in 1 16 64 256; do
  bash bench/device-run.sh bench gemm --models --filter "M=$m " --check --host-gate --back-to-back 20 --iters 10 --warmup-ms 200 2>&1 \
    | grep -E "^M=|error|FAIL|panic|^#" | sed -E 's/PASS \(rel_fro_err[^)]*\)?[^[]*/PASS /; s/ +\[host us.*//' | cut -c1-170
done
bash bench/device-run.sh bench gemm --models --filter "M=1024 " --check --host-gate --iters 10 --warmup-ms 300 2>&1 \
  | grep -E "^M=|error|FAIL|panic" | sed -E 's/PASS \(rel_fro_err[^)]*\)?[^[]*/PASS /; s/ +\[host us.*//' | cut -c1-170
bash bench/device-run.sh bench gemm --models --filter "M=4096 " --host-gate --iters 10 --warmup-ms 300 2>&1 \
  | grep -E "^M=|error|FAIL|panic" | sed -E 's/ +\[host us.*//' | cut -c1-170
ls $OUT
