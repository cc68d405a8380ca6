#!/usr/bin/env bash
# run274 (2026-12-03, one H200; main dc3b071): the review's test changes (defaults_match_reference with the split
# rules' tile; the one-wave split cases asserted on 132 SMs; 1000 x 1152 x 6912 in 144 columns x 2 slices). Carry [".gpu"].
set -u
TEST_TIMEOUT=110 bash bench/device-run.sh tests gpu_gemm- one_wave_cols split_rule_default 2>&1 | grep -E "^ok|^FAIL|passed|test result|panicked|left:|right:" | head -20
