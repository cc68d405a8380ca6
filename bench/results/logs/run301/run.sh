#!/usr/bin/env bash
# run301: branch cn-rule at 8ac626e (carry [".gpu"]).
# 1: gpu_gemm (cluster_n_default_matches_reference with the 128 x 136 branch).
# 2: where the column rule's 128 x 136 is the default at K < 7168: against 128 x 128 unclustered, and -n2 at K = 6144.
# 3: one wave of few 128 x 128 tiles at M > 2048 (76-96 tiles): the default (-n2) against the one-wave width (88-104).
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "test result|FAILED|panicked|left:|right:" | head -30
export ITERS=10 WARMUP_MS=200 PASSES=3
echo "### 2"
bash bench/tile-pairs.sh "1088x1792x4096:narrow-tma-store 1440x1280x4096:narrow-tma-store 1824x1024x4096:narrow-tma-store 2752x768x4096:narrow-tma-store 1440x1280x2048:narrow-tma-store 1088x1792x6144:narrow-tma-store 1088x1792x6144:narrow-tma-store-n2 1024x2048x6144:narrow-tma-store-n2"
echo "### 3"
bash bench/tile-pairs.sh "2336x512x8192:cols-128x88-tma-store 2560x512x8192:cols-128x88-tma-store 3072x512x8192:cols-128x104-tma-store 2304x640x8192:cols-128x96-tma-store"
