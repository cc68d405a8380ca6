#!/usr/bin/env bash
# run346: where to cut few_tiles_narrower_swapped_instead_of: main 204e73b against the branch (no margin) on 24 fresh
# shapes whose modelled cost ratio (pick / split as merged) is 0.76-0.92, three per 0.02 (run 345's four losses were
# at 0.84-0.94). Back to back x20 behind the host gate, two passes in both orders, --check in pass 1.
# carry [".gpu", ".gpu-main"].
set -u
S=29x368x7872,48x648x4160,36x280x9152,48x376x14016,44x424x12608,36x304x12480,19x1280x4096,28x864x7040,38x392x11328,35x616x6144,18x1408x4352,21x1168x4352,23x528x7680,47x744x6464,41x1024x4480,46x520x8512,38x1368x4416,21x328x12736,42x912x4544,42x1360x4288,57x776x6784,52x712x6784,38x680x7552,49x1160x5184
ITERS=20 WARMUP_MS=200 CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh "$S" "--host-gate --back-to-back 20" .gpu-main .gpu
