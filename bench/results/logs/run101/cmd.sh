# run101: stage depth of the 128x256 tile (branch stages-probe 14079a9, packed as .gpu-probe), one H200.
set -u
export GPU_DIR=.gpu-probe
S=1024x8192x4096,2048x8192x4096,8192x8192x4096,2048x8192x14336,2049x8192x4096
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit --format=csv
for t in wide-tma-store wide wide-s3 wide-s2 wide-tma-store-s2 wide-tma-store wide; do
  echo "=== $t"
  bash bench/device-run.sh bench gemm --tile $t --shape $S --iters 30 --warmup-ms 1000 --check 2>&1 | grep -v '^\s*$' | tail -8
done
bash bench/device-run.sh spans gemm --shape 129x8192x4096,1024x8192x4096,2048x8192x4096,2049x8192x4096,8192x8192x4096 --iters 5 2>&1 | tail -5
cd "$OUT" && tar czf run101.tgz *.json *.log spans* 2>/dev/null; ls
