#!/usr/bin/env bash
# run223 (2026-12-02): README command 1 on one H200 (one rank: the local path, the plain GEMM's default, now with the
# clustered column-fitted tiles of 176-208 columns on DeepSeek-V3 M >= 4096 and o-proj M >= 8192), --check; then the
# plain default table (bench gemm --check, the built-in shapes) for the session's record.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm --test gpu_gemm_allreduce && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], bash bench/results/logs/run223/run223.sh
set -u
timeout 150 bash bench/device-run.sh bench gemm-allreduce --check 2>&1 | cut -c1-200 | tail -20
timeout 150 bash bench/device-run.sh bench gemm --check 2>&1 | grep -E "^shape|error|FAIL|panic|wrote" | cut -c1-230
