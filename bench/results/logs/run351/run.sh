#!/usr/bin/env bash
# run351: branch few-tiles-narrower-swapped with split_fixup_round_trips as the kernel makes them and the model refitted
# (0.2 us least gain): gpu_gemm's split test, then main 204e73b against it on the 12 shapes of runs 343-347 whose new
# pick was not timed, 64 x 256 x 7168 and 7 fresh shapes it moves, back to back x20 behind the host gate, two passes
# in both orders, --check in pass 1. carry [".gpu", ".gpu-main"].
set -u
TEST_TIMEOUT=200 bash bench/device-run.sh tests gpu_gemm split_rule_default_matches_reference 2>&1 | grep -E "^test |test result|FAILED|panicked" | head
S=40x512x7168,48x512x7168,20x712x6464,62x384x12480,36x808x5824,51x416x12544,28x864x7040,23x528x7680,47x744x6464,41x1024x4480,42x912x4544,38x680x7552,64x256x7168,62x736x6080,23x152x6336,24x1056x5440,26x528x7680,23x688x4736,45x640x6848,17x368x13888
ITERS=20 WARMUP_MS=200 CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh "$S" "--host-gate --back-to-back 20" .gpu-main .gpu
