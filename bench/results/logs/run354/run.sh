#!/usr/bin/env bash
# run354 (branch shared-fixup): the shared split fix-up. 1) gpu_gemm (all, with the new
# shared_split_fixup_gives_the_serial_bits). 2) Tall M, narrow N (run 353's shapes): forced 128-row tiles in one wave of
# slices, serial against shared (--split-fixup), and the default. 3) The current rules' picks of 3+ slices (shared by
# default now) against --split-fixup serial. 4) main (79132ec) against the branch's default on shapes the rules split in 2
# (serial either way: does the serial path cost anything now?). Back to back x20 behind the host gate. carry [".gpu", ".gpu-main"].
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm
grep -E "^ok .*(Shared|Serial|Auto)|^skip" "$OUT/test-logs/"*gpu_gemm*.log | head -60
B="--host-gate --back-to-back 20"
N="--tile narrow-tma-store"; W="--tile swap-ab-128x64-tma-store"; Q="--tile swap-ab-128x128-tma-store"; H="--tile wide-tma-store"
ab() { echo "#### $1"; bash bench/gemm-ab.sh "$@"; }
ab 735x256x12480 "$B" "$N --split-last-wave 11 --split-fixup serial $B" "$N --split-last-wave 11 --split-fixup shared $B" \
  "$Q --split-last-wave 11 --split-fixup shared $B" "$W --split-last-wave 4 --split-fixup serial $B" "$W --split-last-wave 4 --split-fixup shared $B" \
  "$W --split-last-wave 5 --split-fixup shared $B" "$H --split-last-wave 16 --split-fixup shared $B" "$N --split-last-wave 8 --split-fixup shared $B"
for s in 743x256x9216:11 884x256x9216:9 1024x256x7168:8 703x264x5632:7 447x448x12736:8 589x384x5568:8 914x256x5056:8; do
  sh=${s%:*}; S=${s#*:}
  ab "$sh" "$B" "$N --split-last-wave $S --split-fixup serial $B" "$N --split-last-wave $S --split-fixup shared $B" \
    "$Q --split-last-wave $S --split-fixup shared $B" "$W --split-last-wave 4 --split-fixup serial $B" "$W --split-last-wave 4 --split-fixup shared $B"
done
echo "#### rules' picks of 3+ slices: auto (shared) against serial"
for s in 64x256x7168 64x768x4096 62x384x12480 24x256x14336 48x256x7168 256x1024x4096 198x1008x5696 1000x8x4096 129x8192x14336 8x9216x7168; do
  ab "$s" "$B" "--split-fixup serial $B"
done
echo "#### main against the branch (default)"
CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh 735x256x12480,256x896x5120,1024x256x7168,4096x4096x4096,2049x8192x4096 "$B" .gpu-main .gpu
