#!/usr/bin/env bash
# Run 444 (session 61, one GPU): branch moe-combine (.gpu) after helper-113's review: the tile and
# each rank's rows in use among the agree words, 16-byte map entries {epoch, entry, source,
# expert}: the combine's tests (new cases: ranks with different tiles, a row past the rows in
# use), then the bench once (--check) to see nothing moved.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_moe_gemm_combine
# carry [".gpu"], command "bash bench/results/logs/run444/run.sh".
set -u
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_moe_gemm_combine 2>&1 | grep -E "^ok |^FAIL|^test |panicked|passed|failed|rank [0-9]" | cut -c1-400 | tail -20
timeout 100 bash bench/device-run.sh bench moe-gemm-combine --share-gpu --check 2>&1 | grep -E "like|FAIL|error" | cut -c1-260
