#!/usr/bin/env bash
# run262 (2026-12-03, one H200): the committed tree 60d716b (helper-60's mends after run 261): gpu_gemm_allreduce's
# one_rank_runs_the_plain_gemm (now asserting the three rules' picks on 132 SMs), a forced count on the two-wave
# rule's shapes (choose_for_split: the 64 x 256 tiles; 1 x 16896 x 4096 was refused before the mend), then gpu_gemm
# as the budget allows.
set -u
TEST_TIMEOUT=120 bash bench/device-run.sh tests gpu_gemm_allreduce one_rank_runs_the_plain_gemm --nocapture 2>&1 | grep -E "test result|^ok|FAIL|panicked" | head -20
ITERS=10 WARMUP_MS=200 PASSES=1 bash bench/gemm-ab.sh 1x16896x4096,1x14336x4096 "--host-gate --back-to-back 20" "--host-gate --back-to-back 20 --split-last-wave 2"
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm- 2>&1 | grep -E "test result|passed|failed|FAIL|panicked" | head -20
