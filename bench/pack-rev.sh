#!/usr/bin/env bash
# Builds the `mkernel` binary and chosen test binaries of another revision (a branch or
# commit) into a folder that bench/device-run.sh takes as GPU_DIR, so one device call can
# run main's .gpu/ and branches side by side (carry: [".gpu", ".gpu-<name>", ...]).
#   bash bench/pack-rev.sh REV DIR [TEST_TARGET...]
#   e.g. bash bench/pack-rev.sh host-gate .gpu-gate gpu_barrier
#        then on the device: GPU_DIR=.gpu-gate bash bench/device-run.sh tests gpu_barrier
# DIR must be a new top-level folder named .gpu-*, ignored by git (added to .gitignore).
# ../shared/tools/gpu-pack wipes only .gpu/.
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: bash bench/pack-rev.sh REV DIR [TEST_TARGET...]" >&2; exit 2; }
rev=$1 dir=$2; shift 2
[[ $dir == .gpu-* && $dir != */* ]] || { echo "pack-rev: DIR must be a top-level .gpu-* folder, got '$dir'" >&2; exit 2; }
root=$(git rev-parse --show-toplevel)
cd "$root"
sha=$(git rev-parse --verify "$rev^{commit}")
wt=$(mktemp -d /tmp/mkernel-pack-rev-XXXXXX)
git worktree add --detach "$wt" "$sha" >/dev/null
trap 'git worktree remove --force "$wt" >/dev/null 2>&1 || true' EXIT
target=${CARGO_TARGET_DIR:-/tmp/mkernel-pack-rev-target}
(cd "$wt" && CARGO_TARGET_DIR=$target cargo build --release -p mkernel --bin mkernel)
rm -rf "$dir"; mkdir -p "$dir/bin" "$dir/tests"
cp "$target/release/mkernel" "$dir/bin/"
for t in "$@"; do
  exe=$(cd "$wt" && CARGO_TARGET_DIR=$target cargo test --release -p mkernel-tests --test "$t" --no-run --message-format=json \
    | python3 -c '
import sys, json
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m.get("profile", {}).get("test"):
        print(m["executable"])')
  [[ -n $exe ]] || { echo "pack-rev: no test binary for '$t'" >&2; exit 1; }
  cp "$exe" "$dir/tests/"
done
strip "$dir/bin/mkernel" "$dir"/tests/* 2>/dev/null || true
# Libraries and headers the device runner expects (libfabric, CUPTI), as for .gpu/.
GPU_DIR=$dir bash bench/pack-libs.sh
echo "$sha" > "$dir/REVISION"
echo "pack-rev: $rev ($sha) -> $dir: bin/mkernel$( (($#)) && echo ", tests: $*" ), $(du -sh "$dir" | cut -f1)"
