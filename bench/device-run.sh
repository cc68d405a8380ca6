#!/usr/bin/env bash
# Device-machine entry point: run from the repository root with `.gpu/` (built here
# by ../shared/tools/gpu-pack --bin mkernel) carried along. Sets up the libraries
# the binaries dlopen, keeps NVLink multicast off, then runs what is asked:
#   bash bench/device-run.sh tests [FILTER]      # packed test binaries
#   bash bench/device-run.sh bench ARGS...       # the mkernel binary (e.g. bench gemm --check)
#   bash bench/device-run.sh spans ARGS...       # the mkernel binary under CUPTI (kernel
#                                                # times, gaps, rank skew: bench/probes/
#                                                # kernel_spans.{c,py}); $OUT/spans.csv.gz
#   bash bench/device-run.sh ncu NAME ARGS...    # Nsight Compute on `bench gemm ARGS` (ours and
#                                                # cuBLAS's kernels; $OUT/NAME.*; NCU_BENCH: another bench)
#   bash bench/device-run.sh measure             # the issue-3 figures: gemm, fused (both
#                                                # modes, --check-reps 100; one process also
#                                                # times the one-shot path next to the
#                                                # default), event traces (traces.tgz)
# Logs and JSON go under $OUT (or /tmp); test logs under $OUT/test-logs.
# Before: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-kernels -p mkernel -p mkernel-tests
#         bash bench/pack-libs.sh     (libfabric for the proxy-stream test, CUPTI headers)
#         bash bench/pack-rev.sh REV .gpu-NAME [TEST...]   (another branch, run with
#         GPU_DIR=.gpu-NAME; carry [".gpu", ".gpu-NAME"])
# A full pass is two device calls: `tests gpu_` (~3 min), then `measure` (~3 min; run 22).
set -u
# GPU_DIR: where the packed binaries are (default .gpu; any ignored folder carried along).
gpu=${GPU_DIR:-.gpu}
libdir=/tmp/mkernel-lib
mkdir -p "$libdir"
# cudarc dlopens "libnccl.so"; machines with only the runtime package have libnccl.so.2.
if ! ldconfig -p | grep -q 'libnccl\.so '; then
  nccl=$(ldconfig -p | awk '/libnccl\.so\.2 /{print $NF; exit}')
  [[ -n $nccl ]] && ln -sf "$nccl" "$libdir/libnccl.so"
fi
export LD_LIBRARY_PATH=$libdir:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
# Shared libraries packed next to the binaries (bench/pack-libs.sh: libfabric and its
# dependencies for the proxy-stream test, where the device machine has none).
[[ -d $gpu/lib ]] && export LD_LIBRARY_PATH=$PWD/$gpu/lib:$LD_LIBRARY_PATH
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export MKERNEL_CACHE_DIR=${MKERNEL_CACHE_DIR:-/tmp/mkernel-jit}
out=${OUT:-/tmp}
what=${1:-tests}; shift || true
case $what in
  tests)
    # Like .gpu/run.sh, but each binary is bounded (TEST_TIMEOUT s) and only the
    # binaries whose name contains $1 run ("" = all); remaining args go to the harness.
    pick=${1:-}; shift || true
    export MKERNEL_REQUIRE_GPU=1 RUST_BACKTRACE=1
    logs=${OUT:-/tmp}/test-logs; mkdir -p "$logs"; pass=0; fail=0
    for t in "$gpu"/tests/*; do
      name=$(basename "$t"); [[ $name == *"$pick"* ]] || continue
      if timeout "${TEST_TIMEOUT:-240}" "$t" --test-threads=1 "$@" > "$logs/$name.log" 2>&1; then
        pass=$((pass+1)); echo "ok    $name: $(grep -E '^test result' "$logs/$name.log" | tail -1)"
      else
        rc=$?; fail=$((fail+1)); echo "FAIL  $name (rc $rc$([[ $rc == 124 ]] && echo ", timed out after ${TEST_TIMEOUT:-240} s"))"; tail -30 "$logs/$name.log"
      fi
    done
    echo "$pass passed, $fail failed"; [[ $fail == 0 ]] ;;
  bench) "$gpu"/bin/mkernel bench "$@" --out-dir "$out" 2>&1 | tee -a "$out/bench.log"; exit "${PIPESTATUS[0]}" ;;
  spans)
    [[ -f $gpu/cupti-include/cupti.h ]] || { echo "device-run.sh spans: no $gpu/cupti-include (bench/pack-libs.sh)" >&2; exit 2; }
    cuda_lib=$(dirname "$(ls /usr/local/cuda/targets/x86_64-linux/lib/libcupti.so* 2>/dev/null | head -1)")
    [[ -n $cuda_lib && $cuda_lib != . ]] || { echo "device-run.sh spans: libcupti not found under /usr/local/cuda" >&2; exit 2; }
    gcc -shared -fPIC -O2 -o /tmp/mkernel-kernel-spans.so bench/probes/kernel_spans.c -I"$gpu/cupti-include" \
      -I/usr/local/cuda/include -L"$cuda_lib" -lcupti -Wl,-rpath,"$cuda_lib" || exit 2
    CUDA_INJECTION64_PATH=/tmp/mkernel-kernel-spans.so KERNEL_SPANS_OUT=/tmp/mkernel-spans.csv \
      "$gpu"/bin/mkernel bench "$@" --out-dir "$out" 2>&1 | tee -a "$out/bench.log"
    rc=${PIPESTATUS[0]}
    python3 bench/probes/kernel_spans.py /tmp/mkernel-spans.csv --skip 50
    gzip -c /tmp/mkernel-spans.csv > "$out/spans.csv.gz"
    exit "$rc" ;;
  measure)
    rc=0
    for args in "gemm --check --iters 15" \
                "gemm-allreduce --check --check-reps 100 --iters 20 --sweep-paths one-shot" \
                "gemm-allreduce --check --check-reps 100 --iters 20 --procs 2"; do
      # shellcheck disable=SC2086
      "$gpu"/bin/mkernel bench $args --out-dir "$out" >> "$out/bench.log" 2>&1 || { rc=1; echo "FAILED: bench $args"; }
      grep -vE '^#|^$' "$out/bench.log" | tail -1 | cut -c1-160
    done
    # Event traces of one call per shape (where the time goes), as one archive: the
    # device tool returns at most a few files.
    "$gpu"/bin/mkernel bench gemm-allreduce --iters 5 --trace --out-dir "$out/traces" >> "$out/bench.log" 2>&1 \
      || { rc=1; echo "FAILED: bench gemm-allreduce --trace"; }
    grep 'trace rank' "$out/bench.log" | tail -4 | cut -c1-200
    tar czf "$out/traces.tgz" -C "$out" traces && rm -rf "$out/traces"
    exit $rc ;;
  ncu)
    # Nsight Compute on our kernels and the library's in one bench process (run 285): clocks
    # left alone (--clock-control none: never lock or change clocks here), caches kept
    # between replays (as back to back). The first NCU_COUNT (4) kernels matching
    # NCU_KERNELS into $out/NAME.ncu-rep, their details page NAME.txt, raw counters of each
    # side's first kernel NAME.{ours,cublas}.raw.csv (bench/probes/ncu_compare.py) and our
    # kernel's SASS with stall samples NAME.ours.sass.csv (ours only: cuBLAS's code is not
    # ours to disassemble). Default: `bench gemm` (ours mkernel_gemm_*, cuBLAS's nvjet*/sm90_*);
    # NCU_BENCH=ring-attention NCU_KERNELS=regex:mkernel_attention NCU_OURS=mkernel_attention
    # profiles another bench (its ARGS as given, plus --no-json).
    name=${1:?device-run.sh ncu NAME BENCH_ARGS...}; shift
    ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    [[ -x $ncu ]] || { echo "device-run.sh ncu: no ncu on this machine" >&2; exit 2; }
    bench=${NCU_BENCH:-gemm} kernels=${NCU_KERNELS:-regex:mkernel_gemm|nvjet|sm90_} ours=${NCU_OURS:-mkernel_gemm}
    extra=(--no-json); [[ $bench == gemm ]] && extra=(--iters 2 --warmup-ms 0 --no-json)
    "$ncu" --clock-control none --cache-control none --set full -k "$kernels" \
      -c "${NCU_COUNT:-4}" -f -o "$out/$name" \
      "$gpu"/bin/mkernel bench "$bench" "${extra[@]}" "$@" > "$out/$name.run.log" 2>&1
    rc=$?
    "$ncu" --import "$out/$name.ncu-rep" --page details > "$out/$name.txt" 2>&1
    "$ncu" --import "$out/$name.ncu-rep" --kernel-name regex:"$ours" --launch-count 1 --page raw --csv > "$out/$name.ours.raw.csv" 2>&1
    [[ $bench == gemm ]] && "$ncu" --import "$out/$name.ncu-rep" --kernel-name regex:'nvjet|sm90_' --launch-count 1 --page raw --csv > "$out/$name.cublas.raw.csv" 2>&1
    "$ncu" --import "$out/$name.ncu-rep" --kernel-name regex:"$ours" --launch-count 1 --page source --print-source sass --csv \
      > "$out/$name.ours.sass.csv" 2>&1
    echo "device-run.sh ncu $name: rc $rc, $(grep -c '^  [a-z_]' "$out/$name.txt") kernels in $out/$name.txt"
    exit $rc ;;
  *) echo "device-run.sh: unknown '$what' (tests | bench | spans | ncu | measure)" >&2; exit 2 ;;
esac
