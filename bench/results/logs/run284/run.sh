#!/usr/bin/env bash
# run284: carry [".gpu-cn"].
set -u
export GPU_DIR=.gpu-cn ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
ab() { bash bench/gemm-ab.sh "$1" "$B" "$B --tile $2"; }
ab 1592x1328x1024,1312x9680x2048,1718x1184x8192,2166x1904x2048,1144x3704x4096,1172x1592x2048 cols-128x136-tma-store
ab 1060x4040x1024,1599x2744x1024,1046x3992x4096 cols-128x144-tma-store
ab 1389x2672x2048,1144x9752x14336 cols-128x224-tma-store
ab 1116x7496x4096,1487x3800x2048 cols-128x176-tma-store
ab 1088x6032x8192,1319x4952x1024 cols-128x208-tma-store
ab 1487x6008x14336,1067x8072x1024 cols-128x184-tma-store
ab 1536x6464x2048,1256x7784x14336 cols-128x200-tma-store
ab 1081x8192x8192,1333x6656x1024 cols-128x192-tma-store
ab 1214x5552x2048,1032x6104x8192 cols-128x216-tma-store
