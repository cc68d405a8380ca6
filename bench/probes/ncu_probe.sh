#!/usr/bin/env bash
# Nsight Compute probe: where the GEMM's time goes (ours against cuBLAS), one H200.
# Usage (device machine, repository root, .gpu carried): bash bench/probes/ncu_probe.sh SHAPES [TILE]
# (NCU_METRICS: more metrics, comma-separated; NCU_SECTIONS: more ncu options)
set -u
shapes=${1:-2048x8192x4096}
tile=${2:-}
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/nsight-compute*/ncu 2>/dev/null | head -1)
echo "ncu: ${ncu:-none}"
[[ -n $ncu ]] || { ls /usr/local/cuda/ /opt/nvidia 2>&1 | head; exit 3; }
"$ncu" --version | tail -1
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} MKERNEL_CACHE_DIR=/tmp/mkernel-jit
out=${OUT:-/tmp}
extra=(); [[ -n $tile ]] && extra=(--tile "$tile")
# --clock-control none: ncu would otherwise lock the clocks to base while it profiles
# (the project never changes clocks; figures are then at whatever clock the GPU runs).
timeout 500 "$ncu" --clock-control none --kernel-name regex:'gemm|nvjet|sm90' --launch-skip 6 --launch-count 4 \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats ${NCU_SECTIONS:-} \
  --metrics sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct${NCU_METRICS:+,$NCU_METRICS} \
  .gpu/bin/mkernel bench gemm --shape "$shapes" --iters 3 --warmup 1 --no-json "${extra[@]}" > "$out/ncu-$shapes.txt" 2>&1
rc=$?
grep -E "^  [a-zA-Z_].*\(|Duration|Elapsed Cycles|SM Frequency|Compute \(SM\) Throughput|Memory Throughput|L1/TEX Hit|L2 Hit|DRAM Throughput|Shared|gmma|per_second|L2 Cache Throughput|L1/TEX Cache Throughput|Executed Ipc|lsu_wavefronts|long_scoreboard|Registers|Achieved Occupancy|ERR|==PROF==|error" "$out/ncu-$shapes.txt" | head -150
exit $rc
