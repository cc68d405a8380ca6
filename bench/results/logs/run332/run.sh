#!/usr/bin/env bash
# run332: (a) run330b's split test, as it was meant (run330b's filter named no test binary, so it ran nothing);
# (b) the few-tiles rule's 2-slice picks on 128-row (128 x 128) and 64 x 256 tiles against the 64 x 128 tile unsplit,
# which makes as many CTAs or fewer, each over all of K with no fix-up (run 331: 1024 x 896 x 5120 0.0251 -> 0.0215).
# Shapes sampled from the rule's picks on 132 SMs (12 narrow-tma-store in 2, 6 m64-wide-tma-store in 2).
# carry [".gpu"].
set -u
TEST_TIMEOUT=200 bash bench/device-run.sh tests gpu_gemm split_rule_default_matches_reference 2>&1 | tail -3
N=896x1024x4096,1280x768x8192,896x1024x14336,1024x1024x4096,2048x512x4096,384x2688x8192,384x2688x7168,1024x1024x5120,896x1152x5120,4096x256x5120,3072x256x7168,256x4224x14336
W=700x1280x7168,300x3072x8192,300x2560x8192,300x2432x5120,300x2304x4096,700x1152x4096
bash bench/gemm-ab.sh "$N,$W" "" "--tile m64-narrow-tma-store --split-last-wave off"
