#!/usr/bin/env bash
# Device runs' archives (traces.tgz, logs.tgz, spans.csv.gz, ...) live on the branch `logs-archive`, at the
# same paths, not in main's tree: the device tool copies the whole working tree to the GPU machine (64 MiB in
# all, the packed binaries included), and by session 55 these archives were 34 of main's 50 MB. The run's
# text (run.sh, bench.log, test logs) stays in bench/results/logs/runNNN on main; .gitignore keeps the archives
# there untracked (and so not carried).
#   bash bench/archive-logs.sh [PATH...]   # default: every ignored *.tgz / *.gz under bench/results/logs
#   git show logs-archive:bench/results/logs/run117/traces.tgz > traces.tgz      # read one back
#   (in a fresh clone the branch is origin/logs-archive until this script, or `git branch logs-archive
#   origin/logs-archive`, makes the local one)
# It commits onto logs-archive through a temporary index: no checkout, the working tree is untouched. PATHs may be
# relative to the current directory or absolute; each must be a file under bench/results/logs.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
files=()
for f in "$@"; do
  [[ -f $f ]] || { echo "archive-logs: no file $f" >&2; exit 2; }
  rel=$(realpath --relative-to="$root" -- "$f")
  [[ $rel == bench/results/logs/* ]] || { echo "archive-logs: $f is not under $root/bench/results/logs" >&2; exit 2; }
  files+=("$rel")
done
cd "$root"
branch=logs-archive
if [[ $# -eq 0 ]]; then
  mapfile -t files < <(git ls-files --others --ignored --exclude-standard bench/results/logs | grep -E '\.(tgz|gz)$' || true)
fi
[[ ${#files[@]} -gt 0 ]] || { echo "archive-logs: nothing to archive"; exit 0; }
idx=$(mktemp -u /tmp/archive-logs-index-XXXXXX)
trap 'rm -f "$idx"' EXIT
parent=$(git rev-parse --verify -q "refs/heads/$branch" || true)
if [[ -z $parent ]]; then
  # A fresh clone has the archive as origin's branch only: continue it (a new root commit would fork it).
  parent=$(git rev-parse --verify -q "refs/remotes/origin/$branch" || true)
fi
[[ -z $parent ]] || GIT_INDEX_FILE=$idx git read-tree "$parent"
for f in "${files[@]}"; do
  blob=$(git hash-object -w -- "$f")
  GIT_INDEX_FILE=$idx git update-index --add --cacheinfo "100644,$blob,$f"
done
tree=$(GIT_INDEX_FILE=$idx git write-tree)
if [[ -n $parent && $tree == "$(git rev-parse "$parent^{tree}")" ]]; then
  git rev-parse --verify -q "refs/heads/$branch" >/dev/null || git update-ref "refs/heads/$branch" "$parent" ""
  echo "archive-logs: all ${#files[@]} already on $branch"
  exit 0
fi
commit=$(git commit-tree "$tree" ${parent:+-p "$parent"} -m "archive ${#files[@]} device-run archives")
local_parent=$(git rev-parse --verify -q "refs/heads/$branch" || true)
git update-ref "refs/heads/$branch" "$commit" ${local_parent:+"$local_parent"}
echo "archive-logs: ${#files[@]} files on $branch ($commit); read one back with: git show $branch:PATH > FILE"
