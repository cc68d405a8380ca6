# run 100: main after the read-through (publish_early and the L2 hints removed; the storer's early-publish hook gone).
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
R=$OUT/r; mkdir -p "$R"/b; S=$(date +%s)
t() { echo "== t=$(( $(date +%s) - S )) s: $*"; }
t tests; OUT=$R TEST_TIMEOUT=250 bash bench/device-run.sh tests gpu_gemm
for f in "o M=1024" "o M=2048" "odd M"; do t "bench $f"; OUT=$R/b timeout 100 bash bench/device-run.sh bench gemm-allreduce --filter "$f" --check --check-reps 10 --iters 20 | grep -vE '^#' | cut -c1-230; done
t done; tar -C "$OUT" -czf "$OUT/logs.tgz" r && rm -rf "$R"
