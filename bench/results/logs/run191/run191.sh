#!/usr/bin/env bash
# run191 (2026-12-02): helper-48's review fixes on the GPU: split_rule_default_matches_reference with K % 64 != 0 on
# the 64 x 256 and 128 x 256 tiles (8 x 4096 x 4104, 128 x 16896 x 4104), and the kept-workspace test queuing all 11
# streams' calls before reading any output (eviction while the evicted stream's GEMM may still run).
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], OUT=$OUT bash bench/results/logs/run191/run191.sh
set -u
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm split_rule_default_matches_reference gemm_kept_workspaces --nocapture
