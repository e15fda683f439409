#!/usr/bin/env bash
# The operator counts of docs/performance.md: for every relative operator at ViT-A/12
# (84x84, patch 12), the LibTorch operators one training step launches on the path a GPU
# takes, per block (forward + backward) and per step, with each projection algorithm.
# Usage: bench/count_ops.sh [CLI] [MODEL...]   (CLI default build/app/translution)
set -euo pipefail
CLI=${1:-build/app/translution}
shift || true
models=("$@")
scratch=$(mktemp)
trap 'rm -f "$scratch"' EXIT
[ ${#models[@]} -gt 0 ] || models=(translution translution-q translution-k translution-v translution-qk
  translution-qv translution-kv lor lor-q lor-k lor-v lor-qk lor-qv lor-kv rope-translution
  lor-rope-translution translution-abs lor-abs)
echo "| ViT-A/12 | per-matrix: block, step | all-tokens: block, step | offset-batched: block, step |"
echo "| --- | --- | --- | --- |"
for m in "${models[@]}"; do
  row="| $m |"
  for a in per-matrix all-tokens offset-batched; do
    # A model that does not fit (the memory guard's one line) gets that line as its cell.
    if ! json=$("$CLI" bench --model "$m" --preset A --image 84 --patch 12 --mode train --batch 1 --count-ops \
      --algorithm "$a" --json 2>"$scratch"); then
      row+=" $(head -1 "$scratch" | cut -c1-80) |"
      continue
    fi
    row+=" $(python3 -c 'import json, sys
d = json.loads(sys.stdin.readline())
b, s = d["block"], d["step"]
f, k = b["forward"], b["backward"]
print("%d (%d + %d), %d" % (f + k, f, k, s["total"]))' <<<"$json") |"
  done
  echo "$row"
done
