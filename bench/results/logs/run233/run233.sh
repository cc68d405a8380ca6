#!/usr/bin/env bash
# run233 (2026-12-02): K % 64 != 0 (rows not 128-byte multiples, bench/NOTES.md 13.3): does a 4-stage clustered
# column-fitted tile (176/192/208 columns, 27.2) beat the default 3-stage clustered wide tile there, as it does at
# K % 64 == 0? Default against the three forced, two passes (pass 1 --check), sustained clocks (--warmup-ms 800).
# Pack: the .gpu of run232. Call: run with carry [".gpu"]
set -u
WARMUP_MS=800 ITERS=20 bash bench/gemm-ab.sh 8192x8192x4104,4096x4096x4104,2048x8192x4104,8192x7168x9224,4096x4096x1000,2048x8192x1000,16384x8192x4104 \
  "" "--tile cols-128x176-tma-store-c2" "--tile cols-128x192-tma-store-c2" "--tile cols-128x208-tma-store-c2"
