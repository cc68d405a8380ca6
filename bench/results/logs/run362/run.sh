#!/usr/bin/env bash
# run362 (prepared in session 42, not yet run): gpu_gemm in full on main (29f66e3 or later): the three short-K shapes
# added to one_wave_cols_default_matches_reference (206 x 4824 x 576, 254 x 4256 x 704, 235 x 5320 x 1920; NOTES 44.6)
# have not run as a test on a GPU. Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm.
# carry [".gpu"].
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm
grep -E "^test .*(one_wave_cols|split_rule_default)" "$OUT/test-logs/"*gpu_gemm*.log
