#!/usr/bin/env bash
# run407 (prepared in session 53, run in session 54; one GPU; .gpu = main 5230e5a, code-identical to 23f407b): the README's command 1 as a new user runs it on a one-GPU machine
# (bench gemm-allreduce --check: one rank, the local path, every listed shape) after this session's change to the
# bench's flag checks (every shape of the list) (the path flags checked again once the GPUs are counted), and the reduce-scatter's and the
# all-reduce's benches on a shared GPU with a refused flag (exit 2 before any kernel). Expected: PASS on every shape;
# the refusals exit 2 naming the flag.
set -u
nvidia-smi -L
timeout 360 bash bench/device-run.sh bench gemm-allreduce --check --iters 10 --no-json 2>&1 | grep -E "^[a-z].*(PASS|FAIL|rror)|^shape|^error" | cut -c1-200
echo "rc=${PIPESTATUS[0]}"
timeout 100 bash bench/device-run.sh bench gemm-reduce-scatter --share-gpu --comm-path epilogue --check --iters 10 --no-json --shape 1040x8192x4096 2>&1 | grep -E "^shape [0-9]|rror" | cut -c1-300
for flags in "gemm-reduce-scatter --comm-path local --gpus 2 --share-gpu" "gemm-allreduce --comm-path local --share-gpu"; do
  timeout 40 bash bench/device-run.sh bench $flags --no-json 2>&1 | grep -E "rror" | cut -c1-300; echo "exit ${PIPESTATUS[0]} for: $flags"
done
