#!/usr/bin/env bash
# run361 (branch tall-review): main (79132ec; the same picks at M <= 256) against the one-wave-cols rule's short-K
# extension on 9 fresh random shapes it moves (3 each to 72, 80 and 88 columns; M 197-236, K 576-1920) and 256 x 5120
# x 1280, back to back x20 behind the host gate, two passes in both orders, --check in pass 1. carry [".gpu", ".gpu-main"].
set -u
CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh 206x4824x576,199x5032x1088,208x5040x1024,197x4576x1536,228x4680x1728,236x4544x1856,229x5384x640,235x5320x1920,227x5304x1856,256x5120x1280 "--host-gate --back-to-back 20" .gpu-main .gpu
