#!/usr/bin/env bash
# Data-parallel training against one process on the same cores: ViT-A/12 (84x84, patch 12)
# self-attention and LoR-Translution at a global batch of 32, trained by
#   one process using every core (the engine's own split), and
#   `--nproc N` processes with an equal share of the cores each (Gloo over loopback),
# alternating ROUNDS times so that the machine's drift falls on both. Prints one JSON line per run
# (images per second over the run's steps, as its progress reports them) and a summary.
# Usage: bench/distributed_scaling.sh [TRANSLUTION] [ROUNDS] [NPROC]
set -euo pipefail
cli=${1:-build/app/translution}
rounds=${2:-3}
nproc=${3:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
common=(--preset A --image 84 --patch 12 --dataset static --train-samples 4096 --batch 32 --steps 60
        --eval-samples 64 --no-final-eval --seed 1)
run() {  # run MODEL WAY: one training run; prints its JSON line
  local model=$1 way=$2 extra=()
  [ "$way" = processes ] && extra=(--nproc "$nproc")
  "$cli" train --model "$model" "${common[@]}" "${extra[@]}" --out "$work/$model.ckpt" 2>"$work/err" >/dev/null
  local ips
  ips=$(tr '\r' '\n' <"$work/err" | grep -o '[0-9.]* img/s' | tail -1 | cut -d' ' -f1)
  printf '{"model":"%s","way":"%s","processes":%d,"cores":%d,"batch":32,"images_per_second":%s}\n' \
    "$model" "$way" "$([ "$way" = processes ] && echo "$nproc" || echo 1)" "$(nproc)" "$ips"
}
for r in $(seq "$rounds"); do
  for model in attention lor; do
    run "$model" one-process
    run "$model" processes
  done
done | tee "$work/rows.jsonl"
python3 - "$work/rows.jsonl" <<'PY'
import json, sys, statistics as st
rows = [json.loads(l) for l in open(sys.argv[1])]
for m in ("attention", "lor"):
    for w in ("one-process", "processes"):
        v = [r["images_per_second"] for r in rows if r["model"] == m and r["way"] == w]
        print(f"{m:10s} {w:12s} median {st.median(v):7.1f} img/s  (runs: {', '.join(f'{x:.1f}' for x in v)})")
PY
