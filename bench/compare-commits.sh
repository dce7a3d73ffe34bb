#!/usr/bin/env bash
# Runs one bench script in two checkouts, alternating (old, new, old, new, ...), so both see the same
# machine in the same hour: a change made for speed (or a refactor that must not cost any) is measured
# as a ratio within one run. Prints one JSON line per run: {"tree":"old|new","round":n,"result":{...}}.
#
#   git worktree add /tmp/old <commit>; ln -s "$PWD/node_modules" /tmp/old/node_modules
#   bash bench/compare-commits.sh /tmp/old . 3 bench/processor.bench.ts --batches 30
set -euo pipefail
old=$1 new=$2 rounds=$3 script=$4
shift 4
for round in $(seq 1 "$rounds"); do
  for tree in old new; do
    dir=$old; [ "$tree" = new ] && dir=$new
    result=$(cd "$dir" && npx tsx "$script" "$@" 2>/dev/null)
    printf '{"tree":"%s","round":%d,"result":%s}\n' "$tree" "$round" "$(printf '%s' "$result" | tr -d '\n')"
  done
done
