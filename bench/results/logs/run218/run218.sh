#!/usr/bin/env bash
# run218 (2026-12-02): the local path (one rank) takes the plain GEMM's split rules in the communicator's
# workspace (split slots + new split counts region). On one H200: gpu_gemm_allreduce (the four two-GPU tests
# skipped: they need 2 GPUs), then one-rank bench on shapes where mkernel::gemm splits (fused = local path
# should now match "ours GEMM"), --check; then --share-gpu two ranks on GPU 0 (workspace layout grew) --check.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm_allreduce && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], bash bench/results/logs/run218/run218.sh
set -u
TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_gemm_allreduce --skip calls_queued_behind_a_timeout --skip missing_peer_times_out --skip paths_interleaved_back_to_back --skip swapped_operand_tiles_on_the_epilogue > /dev/null 2>&1
grep -hE "^test result|^ok \(|^test .*FAILED$" $OUT/test-logs/*.log | head -20
grep -hE "one_rank|^ok \(8, 9216|^ok \(256, 2048" $OUT/test-logs/*.log | head -10
timeout 150 bash bench/device-run.sh bench gemm-allreduce --gpus 1 --check --shape 8x9216x7168,256x2048x8192,1x14336x14336,300x2048x16384,64x4096x4096,32x8192x4096,129x8192x4096 2>&1 | cut -c1-200 | tail -14
timeout 150 bash bench/device-run.sh bench gemm-allreduce --share-gpu --check --shape 1024x8192x4096,129x8192x4096,2049x8192x4096 2>&1 | cut -c1-200 | tail -8
