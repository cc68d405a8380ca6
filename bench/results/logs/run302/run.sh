#!/usr/bin/env bash
# run302: cn-rule's working tree (.gpu: cols_fit takes 128 x 128 in place of 136 columns making as many tiles in one
# wave; the cluster-N rule without its 136 branch) against cn-rule at 8ac626e (.gpu-head), carry [".gpu", ".gpu-head"].
# 1: gpu_gemm on the new tree. 2: 27 shapes whose pick changes (categories of the CPU scan), two passes.
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "test result|FAILED|panicked|left:|right:" | head -30
export ITERS=10 WARMUP_MS=200
S=2752x448x1024,1856x640x1024,3392x256x7168,1440x1280x4096,1216x384x1024,1216x576x2048,1216x1152x7168,1600x960x4096,1088x1016x2048,1216x960x4096,1088x1152x6144,1728x1024x6144,1088x1664x8192,1216x1408x6144,1216x896x8192,1056x1408x8192,1440x512x4096,1088x576x6144,1088x1280x8192,1216x1024x7168,7200x136x14336,1152x1728x7168,1728x1016x7168,1440x960x8192,1216x960x7168,1344x896x7168,1984x768x14336
bash bench/gemm-ab-dirs.sh $S "--check --host-gate --back-to-back 20" .gpu-head .gpu
