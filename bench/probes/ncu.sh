#!/usr/bin/env bash
# Device machine: Nsight Compute on our GEMM and cuBLAS's in one `bench gemm` process, for
# the counters behind a gap (tensor-pipe and shared-memory utilisation, warp stalls).
#   bash bench/probes/ncu.sh OUT_NAME BENCH_GEMM_ARGS...
#   e.g. bash bench/probes/ncu.sh r80 --shape 1024x1280x8192 --tile cols-128x80-tma-store
# Writes $OUT/OUT_NAME.ncu-rep, $OUT/OUT_NAME.txt (details page) and CSVs of raw counters. Clocks are left alone
# (--clock-control none: never lock or change clocks on the lent machines); caches are not
# flushed between replays (--cache-control none), as in back-to-back calls. Profiles the
# first NCU_COUNT (default 4) GEMM kernels (ours: mkernel_gemm_*, cuBLAS: nvjet*/sm90_*).
set -u
name=${1:?usage: bash bench/probes/ncu.sh OUT_NAME BENCH_GEMM_ARGS...}; shift
gpu=${GPU_DIR:-.gpu}
out=${OUT:-/tmp}
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
[[ -x $ncu ]] || { echo "ncu.sh: no ncu on this machine" >&2; exit 2; }
export LD_LIBRARY_PATH=/tmp/mkernel-lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
[[ -d $gpu/lib ]] && export LD_LIBRARY_PATH=$PWD/$gpu/lib:$LD_LIBRARY_PATH
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export MKERNEL_CACHE_DIR=${MKERNEL_CACHE_DIR:-/tmp/mkernel-jit}
"$ncu" --clock-control none --cache-control none --set full -k 'regex:mkernel_gemm|nvjet|sm90_' \
  -c "${NCU_COUNT:-4}" -f -o "$out/$name" \
  "$gpu"/bin/mkernel bench gemm --iters 2 --warmup-ms 0 --no-json "$@" > "$out/$name.run.log" 2>&1
rc=$?
"$ncu" --import "$out/$name.ncu-rep" --page details > "$out/$name.txt" 2>&1
# Raw counters (stall samples, L2 and crossbar traffic) of the first kernel of each side, as CSV; and our kernel's
# SASS with its stall samples (ours only: cuBLAS's code is not ours to disassemble).
"$ncu" --import "$out/$name.ncu-rep" --kernel-name regex:mkernel_gemm --launch-count 1 --page raw --csv > "$out/$name.ours.raw.csv" 2>&1
"$ncu" --import "$out/$name.ncu-rep" --kernel-name regex:'nvjet|sm90_' --launch-count 1 --page raw --csv > "$out/$name.cublas.raw.csv" 2>&1
"$ncu" --import "$out/$name.ncu-rep" --kernel-name regex:mkernel_gemm --launch-count 1 --page source --print-source sass --csv > "$out/$name.ours.sass.csv" 2>&1
echo "ncu.sh $name: rc $rc, $(grep -c '^  [a-z_]' "$out/$name.txt") kernels in $out/$name.txt (+ .ours.raw.csv, .cublas.raw.csv, .ours.sass.csv)"
exit $rc
