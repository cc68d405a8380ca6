# run108: the issue-3 figures at ce72add (bench/device-run.sh measure), 2x H200; logs and JSON in one archive.
set -u
bash bench/device-run.sh measure
cd "$OUT" && tar czf logs.tgz bench.log *.json traces.tgz 2>/dev/null; ls
