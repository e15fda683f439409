#!/usr/bin/env bash
# The six rows of docs/performance.md's table with two builds of the CLI, alternating
# (A, B, A, B), so a noisy machine's slow minutes fall on both. One JSON line per run:
#   {"engine":"A"|"B","round":R,"result":{...translution bench --json...}}
# Usage: bench/compare_engines.sh OLD/app/translution NEW/app/translution [rounds=2] > results.jsonl
set -euo pipefail
old=$1 new=$2 rounds=${3:-2}
common=(--preset A --image 84 --patch 12)
run() {  # engine round cli bench-arguments...
  local engine=$1 round=$2 cli=$3
  shift 3
  echo "{\"engine\":\"$engine\",\"round\":$round,\"result\":$("$cli" bench "${common[@]}" "$@" --json)}"
}
for ((r = 1; r <= rounds; r++)); do
  for engine in A B; do
    cli=$old
    [ "$engine" = B ] && cli=$new
    for m in attention lor translution; do run "$engine" "$r" "$cli" --model "$m" --mode infer --batch 1 --steps 20; done
    for m in attention lor; do run "$engine" "$r" "$cli" --model "$m" --mode train --batch 32 --steps 4 --warmup 1; done
    run "$engine" "$r" "$cli" --model translution --mode train --batch 32 --steps 3 --warmup 1
  done
done
