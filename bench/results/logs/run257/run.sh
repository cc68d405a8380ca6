#!/usr/bin/env bash
# run257 (2026-12-03, one H200): NOTES 30.3's lead: M <= 64 where the swapped tiles spill past one wave by more than a
# quarter (N = 13824-57344 gate_up rows), the default 64 x 256 tiles (split or not) against the swapped TMA-store
# tile of the same height unsplit and in 2 slices of the left-over. Back to back x20, gated, two passes.
# Pack: as run 256 (.gpu of main 455d971 + dependent_launch_pays). Carry [".gpu"].
set -u
export ITERS=10 WARMUP_MS=200
for mt in 1:8 16:16 64:64; do
  m=${mt%%:*} r=${mt#*:}
  bash bench/gemm-ab.sh ${m}x14336x4096,${m}x13824x5120,${m}x14336x8192,${m}x28672x4096,${m}x28672x8192,${m}x57344x8192 \
    "--host-gate --back-to-back 20" "--host-gate --back-to-back 20 --tile swap-ab-64x${r}-tma-store --split-last-wave off" \
    "--host-gate --back-to-back 20 --tile swap-ab-64x${r}-tma-store --split-last-wave 2"
done
