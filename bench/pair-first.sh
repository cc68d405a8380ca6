#!/usr/bin/env bash
# The first device calls of a session that gets the pair (nvidia-h200-x2), NOTES 18.5 / 19.6, as two phases
# that each fit one device call (600 s). Pack first, here:
#   ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm --test gpu_gemm_allreduce \
#       --test gpu_multiprocess && bash bench/pack-libs.sh
# then run (carry [".gpu"], kind nvidia-h200-x2):
#   bash bench/pair-first.sh 1   # the GPU tests, then the clustered fused defaults against their unclustered tiles
#   bash bench/pair-first.sh 2   # `measure`: the issue-3 table in both communicator modes (--check-reps 100)
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
  *) echo "pair-first.sh: phase 1 or 2, got '$phase'" >&2; exit 2 ;;
esac
