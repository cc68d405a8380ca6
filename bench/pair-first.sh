#!/usr/bin/env bash
# The first device calls of a session that gets the pair (nvidia-h200-x2), NOTES 18.5 / 19.6, as two phases
# that each fit one device call (600 s). Pack first, here:
#   ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm --test gpu_gemm_allreduce \
#       --test gpu_multiprocess --test gpu_gemm_reduce_scatter --test gpu_allgather_gemm --test gpu_moe_dispatch_gemm \
#       --test gpu_ring_attention --test gpu_moe_gemm_combine \
#       && bash bench/pack-libs.sh
# then run (carry [".gpu"], kind nvidia-h200-x2):
#   bash bench/pair-first.sh 1   # the GPU tests, then the clustered fused defaults against their unclustered tiles
#   bash bench/pair-first.sh 3   # the column-fitted tiles on the epilogue path against the defaults (NOTES 48)
#   bash bench/pair-first.sh 2   # `measure`: the issue-3 table in both communicator modes (--check-reps 100)
#   bash bench/pair-first.sh 4   # the reduce-scatter (NOTES 54-56): its tests and its table in both modes
#                                # (pack with --test gpu_gemm_reduce_scatter too)
#   bash bench/pair-first.sh 5   # the all-gather + GEMM (NOTES 57-58): its tests, its table against NCCL's
#                                # all-gather + cuBLAS, push CTAs and chunk length (pack --test gpu_allgather_gemm)
#   bash bench/pair-first.sh 6   # the MoE dispatch + GEMM (NOTES 59): its tests, its table against NCCL's
#                                # all-to-all + cuBLAS per expert (pack --test gpu_moe_dispatch_gemm)
#   bash bench/pair-first.sh 7   # ring attention (NOTES 60-62): its tests, its table against NCCL's all-gather
#                                # of K and V + the same loop, push CTAs (pack --test gpu_ring_attention)
#   bash bench/pair-first.sh 8   # the MoE GEMM + combine (NOTES 64): its tests, its table against cuBLAS per
#                                # expert, push CTAs (pack --test gpu_moe_gemm_combine)
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
    # Since session 55 the epilogue path computes the next rank's rows first and its own last (NOTES 58.8: +2-3
    # points of overlap on a shared H100, expected more where the last wave's copies are link-bound). With the
    # order before it packed too (`bash bench/pack-rev.sh efcf3f8 .gpu-rsold`, carry [".gpu", ".gpu-rsold"]), its
    # table runs first, in the same call, as the baseline.
    TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm_reduce_scatter
    if [[ -x .gpu-rsold/bin/mkernel ]]; then
      GPU_DIR=.gpu-rsold bash bench/device-run.sh bench gemm-reduce-scatter --iters 30 --warmup-ms 1500 --no-json
    fi
    bash bench/device-run.sh bench gemm-reduce-scatter --check --check-reps 20 --iters 30 --warmup-ms 1500
    bash bench/device-run.sh bench gemm-reduce-scatter --procs 2 --check --check-reps 20 --iters 30 --warmup-ms 1500 ;;
  5)
    # The all-gather + GEMM with a GPU per rank (NOTES 57-58; only ranks sharing one GPU so far). Floors (`mkernel
    # plan allgather-gemm`): QKV M=1024 compute 108.7 us, link 21.3 us (8 MiB at 394 GB/s); gate-up M=8192 4.9 ms
    # against 0.17 ms: the push hides if it keeps up with the own rows' wave. Then the push CTAs (8 is a guess:
    # one CTA stores ~22 GB/s to a peer, NOTES 8.1, so 8 move ~180 GB/s) and 128-row chunks against ~256 KiB ones.
    TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_allgather_gemm
    bash bench/device-run.sh bench allgather-gemm --check --iters 30 --warmup-ms 1500
    for flags in "--push-ctas 4" "--push-ctas 16" "--chunk-rows 128"; do
      # shellcheck disable=SC2086
      bash bench/device-run.sh bench allgather-gemm --iters 30 --warmup-ms 1500 --filter "M=1024" $flags
    done ;;
  6)
    # The MoE dispatch + grouped GEMM with a GPU per rank (NOTES 59; only ranks sharing one H100 so far: 0.73 / 0.67
    # of cuBLAS per expert there). Floors (`mkernel plan moe-dispatch-gemm`): Mixtral-like compute 2.44 ms, link 85
    # us (the half of 64 MiB of token rows that goes to the other rank); the dispatch should hide. First run of the
    # unfused baseline (NCCL all-to-all blocks, then cuBLAS per expert: --check compares its rows with the fused
    # call's), then the push CTAs (8 is a guess).
    TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_moe_dispatch_gemm
    bash bench/device-run.sh bench moe-dispatch-gemm --check --iters 20 --warmup-ms 1500
    for flags in "--push-ctas 4" "--push-ctas 16"; do
      # shellcheck disable=SC2086
      bash bench/device-run.sh bench moe-dispatch-gemm --iters 20 --warmup-ms 1500 --filter mixtral $flags
    done ;;
  7)
    # Ring attention with a GPU per rank (NOTES 60-62; only ranks sharing one GPU so far). Two numbers per rank
    # (NOTES 60.3, at the loop's ~530 TFLOP/s of run 432): causal S=4096 rank 1 8.2e11 FLOPs, ~1.55 ms, against
    # 16.8 MB of K and V over ~394 GB/s, 0.04 ms: the push hides; the fused call should match the attention alone
    # and beat NCCL + attention by NCCL's all-gather time (a few percent); zigzag (the default list's "causal
    # zigzag" rows, 62.3) 5.5e11 FLOPs a rank, ~1.05 ms: ~1.5x the contiguous rows. Then the push CTAs (4 is a guess).
    TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_ring_attention
    bash bench/device-run.sh bench ring-attention --check --iters 20 --warmup 3
    for flags in "--push-ctas 2" "--push-ctas 8"; do
      # shellcheck disable=SC2086
      bash bench/device-run.sh bench ring-attention --iters 20 --warmup 3 --filter "S=4096" $flags
    done ;;
  8)
    # The MoE grouped GEMM + combine with a GPU per rank (NOTES 64; only ranks sharing one GPU so far: 0.73 / 0.68 of
    # cuBLAS per expert there). Two numbers a rank: Mixtral-like 0.96 TFLOP, ~1.5 ms at ~650 TFLOP/s, against the
    # half of 67 MB of rows that crosses the link, ~0.1 ms; DeepSeek-V3-like 0.96 TFLOP (+25% padding rows) against
    # ~235 MB over ~394 GB/s, ~0.6 ms, plus the sum's 470 MB of local reads after the GEMM (~0.15 ms): both should
    # hide but the sum. First run of the unfused baseline (cuBLAS per expert, NCCL's all-to-all back, combine_sum;
    # NOTES 64.7): --check compares its y with the fused call's.
    TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_moe_gemm_combine
    bash bench/device-run.sh bench moe-gemm-combine --check --iters 20 --warmup-ms 1500
    for flags in "--push-ctas 4" "--push-ctas 16"; do
      # shellcheck disable=SC2086
      bash bench/device-run.sh bench moe-gemm-combine --iters 20 --warmup-ms 1500 $flags
    done ;;
  *) echo "pair-first.sh: phase 1 to 8, got '$phase'" >&2; exit 2 ;;
esac
