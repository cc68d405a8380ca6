#!/usr/bin/env bash
# Run 450 (session 63, one GPU): main fed39cf regression: every GPU test binary (the tests
# that need two GPUs fail naming "1 GPU(s) present"), then `bench moe-gemm-combine
# --share-gpu --check` with the dest_rows check through MoeRouting::check_dest (65.7, not yet
# device-run), and the all-gather's and the dispatch's shared-GPU benches as a baseline.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests (non-gpu_ test binaries removed)
# carry [".gpu"], command "bash bench/results/logs/run450/run.sh".
set -u
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_ 2>&1 | grep -E "^ok |^FAIL|passed|failed" | cut -c1-300 | tail -14
grep -h -E "^test .*FAILED|present" $OUT/test-logs/*.log 2>/dev/null | sort | uniq -c | head -20
timeout 100 bash bench/device-run.sh bench moe-gemm-combine --share-gpu --check 2>&1 | grep -E "like|FAIL|PASS|rror" | awk '{print substr($0,1,100) " ... " substr($0,length($0)-140)}'
timeout 100 bash bench/device-run.sh bench moe-dispatch-gemm --share-gpu 2>&1 | grep -E "like|FAIL|PASS|rror" | awk '{print substr($0,1,100) " ... " substr($0,length($0)-100)}'
timeout 100 bash bench/device-run.sh bench allgather-gemm --share-gpu 2>&1 | tail -12 | cut -c1-220
