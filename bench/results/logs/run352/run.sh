#!/usr/bin/env bash
# run352 (prepared in session 41, not yet run): the swapped 128 x 64 tile (128 rows of B by 64 of A, two consumer
# warpgroups) in 4 slices in place of the 64 x 64 swapped split in 2 at tall M (385-2048), where run 348 had it 8-33%
# faster at 1024 x 256 and run 349 6-28% slower where N pads its 128-row blocks (N = 160-216): 8 shapes with N a
# multiple of 128, 6 without, random, all the few-tiles split's 64 x 64 in 2 on main. Back to back x20 behind the host
# gate, two passes, --check in pass 1. carry [".gpu"].
set -u
B="--host-gate --back-to-back 20"
for s in $(echo "735x256x12480,743x256x9216,589x384x5568,914x256x5056,692x384x4288,884x256x9216,460x384x8960,765x256x11136,447x448x12736,607x264x5120,402x392x7104,703x264x5632,430x392x6464,396x392x11264" | tr , ' '); do
  echo "#### $s"
  bash bench/gemm-ab.sh "$s" "$B" "--tile swap-ab-128x64-tma-store --split-last-wave 4 $B" "--tile cols-128x64-tma-store --split-last-wave 4 $B"
done
