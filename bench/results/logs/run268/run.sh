#!/usr/bin/env bash
# run268 (2026-12-03, one H200): validation of split_two_row_blocks_for (main b948e92): gpu_gemm's
# split_rule_default_matches_reference (3 new cases: 160 columns at N = 5120 / 5112 with M ragged, 96 at 3072; each
# split run twice on one workspace, same bits, against the reference), then if time is left one --check pass of the
# new defaults against the 128 x 128 tiles as the old default ran them. Trimmed to fit ~60 s after the start.
set -u
TEST_TIMEOUT=100 bash bench/device-run.sh tests gpu_gemm- split_rule_default 2>&1 | grep -E "test result|FAIL|panicked" | head -5
B="--host-gate --back-to-back 20"
ITERS=5 WARMUP_MS=100 PASSES=1 bash bench/gemm-ab.sh 256x3072x8192,256x5120x8192,250x3072x14336 "$B" "$B --tile narrow-tma-store --split-like-rule"
