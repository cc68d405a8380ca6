# run102: which cuBLAS kernels the baseline runs (names, grids) at the issue-3 GEMM shapes; one H200.
set -u
export GPU_DIR=.gpu-probe
bash bench/device-run.sh spans gemm --shape 129x8192x4096,1024x8192x4096,2048x8192x4096,2049x8192x4096,1024x8192x14336,1024x7168x9216 --iters 5 --no-json 2>&1 | tail -4
cd "$OUT"
# Kernels in launch order, runs of one name collapsed: count, grid x, name, median us.
zcat spans.csv.gz | awk -F, 'NR>1 {print $3","$7","$8","($4-$3)/1000}' | sort -t, -k1,1n | awk -F, '
  { key=$2","$3; if (key!=prev && n>0) { print n"x "prev" ~"t" us"; n=0 } prev=key; n++; t=$4 }
  END { print n"x "prev" ~"t" us" }' > kernel-runs.txt
cat kernel-runs.txt
