#!/usr/bin/env bash
# run213 (2026-12-02): the clustered column-fitted default (TileConfig::clustered_instead_of now takes
# cols-128xC-tma-store-c2 for C = 144..240 multiples of 16, M >= 1024, even row blocks, K >= 4096; uncommitted build)
# against its unclustered twin forced, on the shapes whose default is such a tile (K = 8192), sustained clocks, two
# passes. Run 212 measured 176 columns +3-5% (M = 2048), 224/240 at M = 4096 even (-0.6..+0.7%).
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], bash bench/results/logs/run213/run213.sh
set -u
export ITERS=20 WARMUP_MS=800
bash bench/gemm-ab.sh "1024x10240x8192" "" "--tile cols-128x160-tma-store"
bash bench/gemm-ab.sh "1024x14336x8192,2048x7168x8192" "" "--tile cols-128x176-tma-store"
bash bench/gemm-ab.sh "1024x6144x8192,1024x18432x8192" "" "--tile cols-128x192-tma-store"
bash bench/gemm-ab.sh "1024x3584x8192,2048x22016x8192,3072x12288x8192,6144x12288x8192" "" "--tile cols-128x224-tma-store"
bash bench/gemm-ab.sh "3072x18432x8192,6144x14336x8192,16384x2880x8192" "" "--tile cols-128x240-tma-store"
