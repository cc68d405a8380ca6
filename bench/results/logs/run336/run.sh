#!/usr/bin/env bash
# run336: the rule as bounded after run 335 (128 x 128 splits give way only up to K = 5120): gpu_gemm's tests that
# changed, then main 82d08db against the branch on 16 fresh shapes it moves (8 at K <= 5120, 8 above, from 64 x 256
# splits) and on 2601 x 352 and 994 x 944 at K = 4096 and 5120 (run 335's losers, at the K the rule still takes).
# Two passes in both orders, --check in pass 1. carry [".gpu", ".gpu-main"].
set -u
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm split_rule_default_matches_reference few_tiles_half_height_default_matches_reference gemm_kept_workspaces gemm_splits_on_a_workspace gemm_in_a_graph_capture dependent_launch_chain 2>&1 | tail -30
S=784x840x4608,797x1184x5120,478x1792x4096,757x592x5120,333x1264x4096,1789x456x5120,669x1432x5120,278x2952x4096,387x848x13824,427x1568x10240,787x560x5632,389x2008x8704,286x2632x11264,302x1504x6144,420x1792x8192,573x1152x10752,2601x352x4096,2601x352x5120,994x944x4096,994x944x5120
ITERS=20 WARMUP_MS=200 CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh "$S" "" .gpu-main .gpu
