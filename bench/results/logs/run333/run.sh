#!/usr/bin/env bash
# run333: after run 332 (the 64 x 128 tile unsplit 3-35% faster than the few-tiles rule's 2-slice picks on 18/18),
# the rule's other picks against 64 x 128 unsplit and in 2 slices: 128 x 128 in 3 (8 shapes) and in 4 (6), 64 x 256
# in 3 and 4 (3 + 3), the narrower 128-row tiles in 2 and 3 (8). Shapes sampled from the picks on 132 SMs.
# carry [".gpu"].
set -u
S3=768x896x14336,384x1536x7168,1024x640x14336,512x1152x4096,1536x384x5120,896x768x8192,1000x640x7168,896x640x8192
S4=1280x256x4096,256x1920x7168,896x512x8192,512x896x4096,1000x512x8192,256x2048x4096
W=700x1024x8192,300x1792x4096,300x1664x8192,300x1536x7168,700x640x4096,300x1408x8192
C=512x1536x7168,640x1152x14336,256x3200x8192,256x3584x7168,1536x512x8192,1536x512x7168,1586x280x4096,2801x216x14336
bash bench/gemm-ab.sh "$S3,$S4,$W,$C" "" "--tile m64-narrow-tma-store --split-last-wave off" "--tile m64-narrow-tma-store --split-last-wave 2"
