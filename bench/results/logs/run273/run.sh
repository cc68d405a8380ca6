#!/usr/bin/env bash
# run273 (2026-12-03, one H200): run 272's lead: at M = 900 the default's 64 x 256 TMA-store tiles (75) ran 12-15%
# slower than 128 x 128 (72). Where the 64 x 256 tile is the default above M = 256 (ragged M): it, 128 x 128, W unsplit
# and 2W in 2 slices. Gated, back to back x20, two passes (the first --check). Carry [".gpu"].
set -u
export ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
bash bench/gemm-ab.sh 900x1152x6912,900x1152x8192,770x1272x8192,650x1400x8192 "$B" "$B --tile narrow" "$B --tile cols-128x72-tma-store" "$B --tile cols-128x144-tma-store --split-last-wave 2"
bash bench/gemm-ab.sh 320x3584x8192,448x3072x4096,257x2072x4096 "$B" "$B --tile narrow-tma-store --split-like-rule"
