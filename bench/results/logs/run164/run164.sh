#!/usr/bin/env bash
# run164: Stream-K in the engine (WorkUnits' second mode; the split's loops and fixup now go through it), one H200:
# gpu_gemm (new stream_k_matches_reference), the one-GPU fused tests (the engine's loops changed for them too),
# then Stream-K against the default on part-full waves.
set -u
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm_allreduce --skip swapped_operand_tiles_on_the_epilogue_path \
  --skip paths_interleaved --skip missing_peer --skip calls_queued
b() { bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 300 --no-json "$@" 2>&1 | grep -E "^shape|error" | cut -c1-130; }
S1=128x9216x7168,128x8704x8192,112x9216x7168,256x7168x9216,300x8192x4096
S2=129x7168x9216,129x8192x14336,64x7168x9216
for pass in 1 2; do
  echo "== default (pass $pass)"; b --shape $S1,$S2
  echo "== narrow-tma-store stream-k"; b --shape $S1 --tile narrow-tma-store --split-last-wave stream-k
  echo "== swap-ab-64x136-tma-store stream-k"; b --shape 129x7168x9216,129x8192x14336 --tile swap-ab-64x136-tma-store --split-last-wave stream-k
  echo "== swap-ab-64x64-tma-store stream-k"; b --shape 64x7168x9216 --tile swap-ab-64x64-tma-store --split-last-wave stream-k
done
