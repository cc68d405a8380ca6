# run109: the epilogue path without the exit handshake (entry gate instead), 2x H200: GPU tests, then measure.
set -u
TEST_TIMEOUT=450 bash bench/device-run.sh tests gpu_ 2>&1 | tail -12
bash bench/device-run.sh measure 2>&1 | tail -8
cd "$OUT" && tar czf logs.tgz bench.log *.json traces.tgz test-logs 2>/dev/null && rm -rf test-logs traces.tgz *.json; ls
