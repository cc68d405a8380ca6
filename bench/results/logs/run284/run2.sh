#!/usr/bin/env bash
# run284 parts 2-3: carry [".gpu", ".gpu-cn"].
set -u
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm- default > $OUT/tests.log 2>&1; grep -E "^ok|^FAIL|passed|panicked" $OUT/tests.log | head
bash bench/device-run.sh bench gemm --models --filter "M=1024 " --check --host-gate --back-to-back 20 --iters 10 --warmup-ms 200 > $OUT/models.log 2>&1; grep -c PASS $OUT/models.log
ls /usr/local/cuda/bin | tr '\n' ' '; echo; which ncu nsys; ls /opt/nvidia 2>/dev/null; cat /proc/driver/nvidia/params 2>/dev/null | grep -i RmProfilingAdminOnly
