#!/usr/bin/env bash
# run330b: gpu_gemm's split test on main as merged (the narrower few-tiles rule, the pinned picks in one list), and
# --check on four of the rules' picks. carry [".gpu"].
set -u
TEST_TIMEOUT=200 bash bench/device-run.sh tests split_rule_default_matches_reference 2>&1 | grep -E "^test |test result|panicked|FAILED" | tail -5
bash bench/device-run.sh bench gemm --iters 10 --no-json --check --shape 1586x280x4096,971x392x7168,3089x208x13312,1550x552x4096 2>&1 | grep -E "^shape [0-9]|error|FAIL" | cut -c1-170
