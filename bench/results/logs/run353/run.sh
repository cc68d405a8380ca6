#!/usr/bin/env bash
# run353: tall M, narrow N, long K (run 352: main 0.63-0.9 of cuBLAS at M = 700-1024, N = 256-448): forced tiles of
# 128 rows (swapped 128 x 64/128/256, unswapped 128 x 128 and 128 x 256) each in S = min(16, SMs / tiles, K blocks / 8)
# slices (one wave) and the swapped 128 x 64 in 4, against the default; back to back x20 behind the host gate, two passes
# (--check in pass 1). Then Nsight Compute on 735 x 256 x 12480 (the default and cuBLAS). carry [".gpu"].
set -u
B="--host-gate --back-to-back 20"
echo "#### 735x256x12480"; bash bench/gemm-ab.sh 735x256x12480 "$B" "--tile swap-ab-128x64-tma-store --split-last-wave 4 $B" "--tile swap-ab-128x64-tma-store --split-last-wave 5 $B" "--tile swap-ab-128x128-tma-store --split-last-wave 11 $B" "--tile swap-ab-128x256-tma-store --split-last-wave 16 $B" "--tile narrow-tma-store --split-last-wave 11 $B" "--tile wide-tma-store --split-last-wave 16 $B"
echo "#### 743x256x9216"; bash bench/gemm-ab.sh 743x256x9216 "$B" "--tile swap-ab-128x64-tma-store --split-last-wave 4 $B" "--tile swap-ab-128x64-tma-store --split-last-wave 5 $B" "--tile swap-ab-128x128-tma-store --split-last-wave 11 $B" "--tile swap-ab-128x256-tma-store --split-last-wave 16 $B" "--tile narrow-tma-store --split-last-wave 11 $B" "--tile wide-tma-store --split-last-wave 16 $B"
echo "#### 884x256x9216"; bash bench/gemm-ab.sh 884x256x9216 "$B" "--tile swap-ab-128x64-tma-store --split-last-wave 4 $B" "--tile swap-ab-128x128-tma-store --split-last-wave 9 $B" "--tile swap-ab-128x256-tma-store --split-last-wave 16 $B" "--tile narrow-tma-store --split-last-wave 9 $B" "--tile wide-tma-store --split-last-wave 16 $B"
echo "#### 1024x256x7168"; bash bench/gemm-ab.sh 1024x256x7168 "$B" "--tile swap-ab-128x64-tma-store --split-last-wave 4 $B" "--tile swap-ab-128x128-tma-store --split-last-wave 8 $B" "--tile swap-ab-128x256-tma-store --split-last-wave 14 $B" "--tile narrow-tma-store --split-last-wave 8 $B" "--tile wide-tma-store --split-last-wave 14 $B"
echo "#### 703x264x5632"; bash bench/gemm-ab.sh 703x264x5632 "$B" "--tile swap-ab-128x64-tma-store --split-last-wave 4 $B" "--tile swap-ab-128x128-tma-store --split-last-wave 7 $B" "--tile swap-ab-128x256-tma-store --split-last-wave 11 $B" "--tile narrow-tma-store --split-last-wave 7 $B" "--tile wide-tma-store --split-last-wave 11 $B"
echo "#### 447x448x12736"; bash bench/gemm-ab.sh 447x448x12736 "$B" "--tile swap-ab-128x64-tma-store --split-last-wave 4 $B" "--tile swap-ab-128x128-tma-store --split-last-wave 8 $B" "--tile swap-ab-128x256-tma-store --split-last-wave 16 $B" "--tile narrow-tma-store --split-last-wave 8 $B" "--tile wide-tma-store --split-last-wave 16 $B"
echo "#### 589x384x5568"; bash bench/gemm-ab.sh 589x384x5568 "$B" "--tile swap-ab-128x64-tma-store --split-last-wave 4 $B" "--tile swap-ab-128x128-tma-store --split-last-wave 8 $B" "--tile swap-ab-128x256-tma-store --split-last-wave 10 $B" "--tile narrow-tma-store --split-last-wave 8 $B" "--tile wide-tma-store --split-last-wave 10 $B"
echo "#### 914x256x5056"; bash bench/gemm-ab.sh 914x256x5056 "$B" "--tile swap-ab-128x64-tma-store --split-last-wave 4 $B" "--tile swap-ab-128x128-tma-store --split-last-wave 8 $B" "--tile swap-ab-128x256-tma-store --split-last-wave 9 $B" "--tile narrow-tma-store --split-last-wave 8 $B" "--tile wide-tma-store --split-last-wave 9 $B"
mkdir -p /tmp/s
OUT=/tmp/s NCU_COUNT=4 timeout 240 bash bench/device-run.sh ncu tall --shape 735x256x12480
for f in tall.txt tall.ours.raw.csv tall.cublas.raw.csv; do gzip -c /tmp/s/$f > "$OUT/$f.gz"; done
grep -E "^  [a-zA-Z_]|Duration|Elapsed Cycles|Grid Size|Block Size|Cluster Size|Registers Per|L2 Cache Throughput|DRAM Throughput|Compute \(SM\) Throughput" /tmp/s/tall.txt | head -60
