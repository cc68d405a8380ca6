#!/usr/bin/env bash
# run339: after helper-76's review (gemm::launch without a workspace takes only the rules' unbounded 1-slice picks),
# gpu_gemm's split and default tests, the graph capture, the kept workspaces and the PDL chain. carry [".gpu"].
set -u
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm split_rule_default_matches_reference few_tiles_half_height_default_matches_reference gemm_kept_workspaces gemm_splits_on_a_workspace gemm_in_a_graph_capture dependent_launch_chain few_tiles 2>&1 | tail -30
