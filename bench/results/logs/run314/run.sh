#!/usr/bin/env bash
# run314: the equal-groups rule on tile families runs 311-313 did not time (helper-70: 128 x 256, 128 x 128 and
# 64 x 256 TMA-store defaults in one wave at K >= 7168 with row blocks not a multiple of 8), main ab98d80
# (.gpu-main) against equal-groups f530377 (.gpu; device code as main at the closing commit), two passes, --check.
# carry [".gpu", ".gpu-main"]
set -u
export ITERS=30 WARMUP_MS=200
bash bench/gemm-ab-dirs.sh 5423x768x8192,2671x1536x8192,3963x1024x7168,3462x384x7168,2057x640x14336,8499x128x8192,792x2560x7168,656x2048x7168,8740x256x7168 "--check" .gpu-main .gpu
