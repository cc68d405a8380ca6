#!/usr/bin/env bash
# run304: .gpu from run 303 (the ragged bound); the default against -n2 (or the 96-column tile) forced, 3 passes.
export ITERS=10 WARMUP_MS=200 PASSES=3
bash bench/tile-pairs.sh "1088x1280x8192:narrow-tma-store-n2 1440x960x8192:narrow-tma-store-n2 1440x1024x8192:cols-128x96-tma-store 1216x1024x7168:narrow-tma-store-n2 1984x768x14336:narrow-tma-store-n2 1600x960x8192:narrow-tma-store-n2"
