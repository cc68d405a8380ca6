#!/usr/bin/env bash
# run290: tile raster order against L2 reads. carry [".gpu-rx", ".gpu-rn"].
#   .gpu-rx: branch raster-exp (main 0ff32fa + MKERNEL_EXP_DEFINES), unclustered cols-128x80.
#   .gpu-rn: branch raster-exp-n (cluster-n-port + the same), cols-128x80-tma-store-n2 (A multicast in 2-CTA clusters).
set -u
mkdir -p /tmp/x
files=(); names=()
one() {  # one DIR NAME TILE DEFINES
  GPU_DIR=$1 MKERNEL_EXP_DEFINES="$4" OUT=/tmp/x NCU_COUNT=2 timeout 150 bash bench/device-run.sh ncu $2 --shape 1024x1280x8192 --tile $3 > /tmp/x/$2.log 2>&1 || echo "$2 ncu rc $?"
  files+=(/tmp/x/$2.ours.raw.csv); names+=($2)
}
one .gpu-rx m8 cols-128x80-tma-store ""
one .gpu-rx n16 cols-128x80-tma-store "MKERNEL_EXP_NFAST MKERNEL_EXP_GROUP=16"
one .gpu-rx m2 cols-128x80-tma-store "MKERNEL_EXP_GROUP_M=2"
one .gpu-rx n2 cols-128x80-tma-store "MKERNEL_EXP_NFAST MKERNEL_EXP_GROUP=2"
one .gpu-rn c-m8 cols-128x80-tma-store-n2 ""
one .gpu-rn c-n8 cols-128x80-tma-store-n2 "MKERNEL_EXP_NFAST MKERNEL_EXP_GROUP=8"
one .gpu-rn c-n2 cols-128x80-tma-store-n2 "MKERNEL_EXP_NFAST MKERNEL_EXP_GROUP=2"
echo "columns: ${names[*]} cublas"
python3 bench/probes/ncu_compare.py "${files[@]}" /tmp/x/m8.cublas.raw.csv 2>&1 | head -9 | cut -c1-200
grep -h -E "^shape [0-9]|error|FAIL|panic" /tmp/x/*.run.log | cut -c1-100 | head -20
cp /tmp/x/m8.ours.raw.csv /tmp/x/c-n8.ours.raw.csv /tmp/x/m8.cublas.raw.csv $OUT/ 2>/dev/null
