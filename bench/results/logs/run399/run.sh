#!/usr/bin/env bash
# run399 (session 52, one GPU: whichever of H100/H200 the tool gives; ~9 min). Runs 398 and 397 in one device call
# (the machine is released 30 s after a call). .gpu packed at 105ce02:
#   ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm_reduce_scatter --test gpu_gemm_allreduce --test gpu_barrier --test gpu_gemm
# Expected: run398 — every reduce-scatter test that can run on one GPU passes (first GPU run of the operator);
# run397 — the new column-rule tiles 3-10% faster than the old pair defaults, except against wide-c2 (even to 3%).
set -u
nvidia-smi -L
echo "=== run398"
timeout 330 bash bench/results/logs/run398/run.sh
echo "=== run397"
timeout 240 bash bench/results/logs/run397/run.sh
