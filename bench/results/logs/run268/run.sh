#!/usr/bin/env bash
# run268 (2026-12-03, one H200): validation of split_two_row_blocks_for (main + the uncommitted rule): gpu_gemm's
# split_rule_default_matches_reference (3 new cases: 160 columns at N = 5120 / 5112 with M ragged, 96 at 3072) and
# two_row_blocks_cols_default_matches_reference, then the new defaults against the 128 x 128 tiles split as the
# few-tiles rule would (the old default at N = 3072) and the rule's W unsplit, one pass with --check. ~2.5 min.
set -u
TEST_TIMEOUT=150 bash bench/device-run.sh tests gpu_gemm- two_row_blocks_cols_default split_rule_default 2>&1 | grep -E "test result|FAIL|panicked" | head -5
B="--host-gate --back-to-back 20"
ITERS=10 WARMUP_MS=200 PASSES=1 bash bench/gemm-ab.sh 256x3072x8192,256x3584x8192,256x5120x8192,250x3072x14336 "$B" "$B --tile narrow-tma-store --split-like-rule"
