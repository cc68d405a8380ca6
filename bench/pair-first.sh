#!/usr/bin/env bash
# The first device calls of a session that gets the pair (nvidia-h200-x2), NOTES 18.5 / 19.6, as two phases
# that each fit one device call (600 s). Pack first, here:
#   ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm --test gpu_gemm_allreduce \
#       --test gpu_multiprocess && bash bench/pack-libs.sh
# then run (carry [".gpu"], kind nvidia-h200-x2):
#   bash bench/pair-first.sh 1   # the GPU tests, then the clustered fused defaults against their unclustered tiles
#   bash bench/pair-first.sh 3   # the column-fitted tiles on the epilogue path against the defaults (NOTES 48)
#   bash bench/pair-first.sh 2   # `measure`: the issue-3 table in both communicator modes (--check-reps 100)
#   bash bench/pair-first.sh 4   # the reduce-scatter (NOTES 54-56): its tests and its table in both modes
#                                # (pack with --test gpu_gemm_reduce_scatter too)
set -u
phase=${1:-1}
case $phase in
  1)
    TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_
    # M=2049 and o-proj M=2048 take 2-CTA clustered tiles by default since session 16 (NOTES 18.1), not yet timed
    # on the pair; each sweep times the default next to the unclustered tile in the same rounds.
    bash bench/device-run.sh bench gemm-allreduce --check --iters 30 --warmup-ms 1500 --filter "M=2049" \
      --sweep-tiles swap-ab-128x208-tma-store
    bash bench/device-run.sh bench gemm-allreduce --check --iters 30 --warmup-ms 1500 --filter "o M=2048" \
      --sweep-tiles wide-tma-store ;;
  2) bash bench/device-run.sh measure ;;
  3)
    # The column-fitted TMA-store tiles (opt-in on the epilogue path since session 46, NOTES 48): a smaller last wave
    # to copy after the GEMM for about the same work. The model (GEMM at the wide tile's rate per column + the last
    # wave's bytes at 350 GB/s) said o-proj M=2048 ~11 us faster on 144 columns (last wave 7.6 -> 4.4 MB), o-proj
    # M=1024 ~3 us on 168, DeepSeek M=2048 on 176; with run 393's plain rates at these shapes (NOTES 50.4) it says ~4.5
    # us at o-proj M=2048 on 144-c2, a loss at M=1024 on 168, ~7 us at DeepSeek M=2048 on 176-c2. Each sweep times
    # them next to the default in the same rounds (the waves each makes are printed with its config).
    # Since session 49 DeepSeek M=2048's default is 176-c2 (run 394, both ranks on one H200 at M halved: 6.7% faster
    # than 128 x 256 split 2-way; NOTES 52.3): wide-tma-store (split by default) times the old default next to it.
    # The other kinds of change of the column rule: bench/results/logs/run397/run.sh's pairs, old against new, on the
    # pair's own shapes (drop --share-gpu, double M back; NOTES 52.6).
    for f in "M=2048" "M=1024" "M=2049" "o M=4096"; do
      bash bench/device-run.sh bench gemm-allreduce --check --iters 30 --warmup-ms 1500 --filter "$f" \
        --sweep-tiles wide-tma-store,cols-128x136-tma-store,cols-128x144-tma-store,cols-128x144-tma-store-c2,cols-128x152-tma-store,cols-128x168-tma-store,cols-128x176-tma-store-c2
    done ;;
  4)
    # The fused GEMM + reduce-scatter (NOTES 54-56): each rank's rows against the reference, then its table against
    # cuBLAS + ncclReduceScatter. Its ragged M (136, 2056) have head tiles (NOTES 56: ~8% slower than the all-reduce
    # with both ranks on one GPU); the table says what they cost over NVLink. Floors (`mkernel plan gemm-reduce-scatter`): the link's half of the all-reduce's,
    # e.g. o-proj M=1024 21.3 us against 87.0 us of compute, so the copies hide more easily than the all-reduce's.
    TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm_reduce_scatter
    bash bench/device-run.sh bench gemm-reduce-scatter --check --check-reps 20 --iters 30 --warmup-ms 1500
    bash bench/device-run.sh bench gemm-reduce-scatter --procs 2 --check --check-reps 20 --iters 30 --warmup-ms 1500 ;;
  *) echo "pair-first.sh: phase 1, 2, 3 or 4, got '$phase'" >&2; exit 2 ;;
esac
