#!/usr/bin/env bash
# run307 (branch narrow-c2): (1) gpu_gemm's forced-tile test with the new opt-in 48..=112-column -c2 tiles;
# (2) per process (4 each, 40 iterations): does B multicast along M (-c2) or A along N (-n2) end the slow mode
# of the one-wave narrow tiles at ragged M (run 306: 1440x960x8192 on 88 columns 0.041 in 2 processes, 0.049-0.054
# in 3; the default -n2 0.049 in all 5)?
# carry [".gpu"]
set -u
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm swapped_operand_tiles_match_reference 2>&1 | grep -E "ok  |FAIL|test result|panicked|left:|right:" | head -20
for i in 1 2 3 4; do
  echo "== round $i"
  for v in "1440x960x8192:--tile cols-128x88-tma-store" "1440x960x8192:--tile cols-128x96-tma-store" "1440x960x8192:--tile cols-128x96-tma-store-c2" \
           "1440x960x8192:--tile cols-128x96-tma-store-n2" "1440x960x8192:" \
           "1440x1024x8192:--tile cols-128x96-tma-store" "1440x1024x8192:--tile cols-128x96-tma-store-c2" \
           "1216x1024x7168:--tile cols-128x80-tma-store" "1216x1024x7168:--tile cols-128x80-tma-store-c2" \
           "1024x1536x8192:--tile cols-128x96-tma-store" "1024x1536x8192:--tile cols-128x96-tma-store-c2"; do
    chk=; [[ $i == 1 ]] && chk=--check
    # shellcheck disable=SC2086
    echo "$(bash bench/device-run.sh bench gemm --iters 40 --warmup-ms 200 --no-json $chk --shape "${v%%:*}" ${v#*:} 2>&1 | grep -E "^shape [0-9]|error|FAIL|panic" | cut -c1-130) ${v#*:}"
  done
done
