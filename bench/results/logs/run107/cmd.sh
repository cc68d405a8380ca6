# run107: the fused default with swapped-operand tiles for small M (FusedConfig::epilogue_tile), 2x H200.
set -u
TEST_TIMEOUT=450 bash bench/device-run.sh tests gpu_ 2>&1 | tail -4
for procs in 1 2; do
  a=(); [[ $procs == 2 ]] && a=(--procs 2)
  bash bench/device-run.sh bench gemm-allreduce "${a[@]}" --filter "M=129" --check --check-reps 100 --iters 30 --warmup-ms 1500 --sweep-tiles m64-wide-tma-store 2>&1 | grep -v '^\s*$' | grep -v '^#' | tail -4 | cut -c1-260
done
cd "$OUT" && tar czf test-logs.tgz test-logs && rm -rf test-logs; ls
