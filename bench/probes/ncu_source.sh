#!/usr/bin/env bash
# Nsight Compute per-SASS-instruction stall sampling of ours and cuBLAS on one shape:
# $OUT/src-<kernel>.csv (one row per SASS instruction, warp-stall samples by reason).
# Usage (device machine, repository root, .gpu carried): bash bench/probes/ncu_source.sh SHAPE [TILE]
set -u
shape=${1:-2048x8192x4096}
tile=${2:-}
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} MKERNEL_CACHE_DIR=/tmp/mkernel-jit
out=${OUT:-/tmp}
extra=(); [[ -n $tile ]] && extra=(--tile "$tile")
rep=/tmp/mkernel-ncu-src
# --clock-control none: the project never changes clocks.
timeout 300 ncu --clock-control none --kernel-name regex:'mkernel_gemm|nvjet' --launch-skip 6 --launch-count 2 \
  --section SourceCounters --section WarpStateStats -f -o "$rep" \
  .gpu/bin/mkernel bench gemm --shape "$shape" --iters 3 --warmup 1 --no-json "${extra[@]}" > "$out/ncu-src-run.txt" 2>&1 || exit 1
for k in mkernel_gemm nvjet; do
  ncu --import "$rep.ncu-rep" --kernel-name regex:"$k" --page source --print-source sass --csv > "$out/src-$k.csv" 2> "$out/src-$k.err"
  echo "$k: $(wc -l < "$out/src-$k.csv") lines"
done
