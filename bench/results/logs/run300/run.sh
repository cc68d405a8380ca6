#!/usr/bin/env bash
# run300: branch cn-rule (the cluster-N rule: 128 x 128 -> its -n2 twin at M >= 1024, K >= 7168, one wave).
# carry [".gpu"] packed from cn-rule. 1: gpu_gemm tests (cluster_n_default_matches_reference new).
# 2: the rule's picks (default, now -n2) against narrow-tma-store, each in its own process, 3 passes.
# 3: shapes where -n2 fits one wave but the default is a column-fitted tile (cols_fit's 136; one-wave-cols 80-120):
#    default against narrow-tma-store-n2, 3 passes.
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "test result|FAILED|panicked|^ok |cluster" | head -30
export ITERS=10 WARMUP_MS=200 PASSES=3
echo "### 2"
bash bench/tile-pairs.sh "4096x512x8192:narrow-tma-store 2560x768x8192:narrow-tma-store 1152x1792x8192:narrow-tma-store 1664x1280x8192:narrow-tma-store 6144x256x8192:narrow-tma-store 1024x2048x14336:narrow-tma-store 2000x1016x7168:narrow-tma-store"
echo "### 3"
bash bench/tile-pairs.sh "1600x1280x9216:narrow-tma-store-n2 1088x1792x8192:narrow-tma-store-n2 1440x1280x8192:narrow-tma-store-n2 1824x1024x8192:narrow-tma-store-n2 2336x512x8192:narrow-tma-store-n2 2752x768x7168:narrow-tma-store-n2 1024x1280x8192:narrow-tma-store-n2 1024x1536x8192:narrow-tma-store-n2 1280x1280x8192:narrow-tma-store-n2 1024x1792x8192:narrow-tma-store-n2 1280x1536x8192:narrow-tma-store-n2"
