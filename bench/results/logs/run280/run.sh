#!/usr/bin/env bash
# run280 (2026-12-03, one H200, session 32): the one-wave-cols rule (runs 264-272) was measured against defaults on
# partial grids while the programmatic launch's early trigger slowed those (3-14 us at ragged M, run 276). Its picks
# against the tiles it replaced (128 x 128 and 128 x 256 TMA-store, split as the few-tiles rule would), now that
# the trigger is at exit. Back to back x20, host-gated, two passes (the first --check). Carry [".gpu"].
set -u
export ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
bash bench/gemm-ab.sh 321x8456x2048,1500x1280x8192,1000x1272x4096,1001x1784x2048,510x7160x4096,200x5120x8192,193x9216x3456,208x6144x4096,250x3576x4096,1000x760x4096,380x3064x6912,256x10240x8192,1024x1280x8192,256x5120x8192 "$B" "$B --tile narrow-tma-store --split-like-rule" "$B --tile wide-tma-store --split-like-rule"
