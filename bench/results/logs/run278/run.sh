#!/usr/bin/env bash
# run278 (2026-12-03, one H200, session 32): the split rule's new picks (2W in 2 slices in place of the unsplit one-wave
# 64 x 256 default where W <= 80 from K = 6912; 176 and 192 columns in 2 above M = 256 from K = 8192) and the
# programmatic launch of every call (dependent_launch_pays removed): .gpu-old (main 4dc08c1) against .gpu (the change),
# back to back x20, host-gated, two passes in both orders; gpu_gemm first. Carry [".gpu", ".gpu-old"].
set -u
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm- 2>&1 | grep -E "test result|FAILED|failed|panicked" | tail -20
export ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
bash bench/gemm-ab-dirs.sh 257x3344x8192,313x3392x8192,414x2528x8192,520x1808x8192,563x2000x6912,822x1352x8192,899x1040x14336,433x2480x6912,321x3536x8192,479x2648x8192,598x2120x8192,1000x1400x8192,1396x1040x8192,1024x1408x14336,1024x1536x8192,2000x760x14336,384x4096x14336,2048x768x8192,1024x1536x6912,654x1952x8192,1x5120x27648,1x57344x8192,16x5120x13824 "$B --check" .gpu-old .gpu
