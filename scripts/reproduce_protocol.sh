#!/usr/bin/env bash
# The papers' Table 2 protocol at a budget this 2-core CPU can afford, plus the
# translation sweeps of the bundled models: the measurements behind bench/results.md.
#   1. For self-attention, LoR-Translution and Translution (the bundled models'
#      architectures), train on static and on dynamic MNIST with the same budget
#      and seed, then `translution eval --protocol` (Static->Static,
#      Dynamic->Dynamic, Static->Dynamic).
#   2. `translution sweep` of each bundled model (resources/models/*.ckpt).
# Outputs go to runs/protocol/ and bench/results/ (heat maps, CSVs, JSON).
# Usage: scripts/reproduce_protocol.sh [--samples N] [--epochs E] [--models "attention lor translution"]
#                                      [--layout grid|sequence|causal-sequence] [--no-sweeps]
#        (default 12000 digits, 1 epoch, all three, 2-D grids, sweeps of the bundled models)
#        A layout other than grid reads the patches as one sequence with 1-D offsets; its
#        runs are named NAME-LAYOUT.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cli=$BUILD_DIR/app/translution
samples=12000
epochs=1
models="attention lor translution"
layout=grid
sweeps=1
while [ $# -gt 0 ]; do
  case $1 in
    --samples) samples=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --layout) layout=$2; shift 2 ;;
    --no-sweeps) sweeps=0; shift ;;
    *) die "unknown option $1 (expected --samples N, --epochs E, --models LIST, --layout L or --no-sweeps)" ;;
  esac
done
suffix=""
[ "$layout" = grid ] || suffix="-$layout"
out=$ROOT/runs/protocol
docs=$ROOT/bench/results
mkdir -p "$out" "$docs"

declare -A arch=(
  [attention]="--model attention --preset tiny --depth 6"
  [lor]="--model lor --preset tiny --depth 4"
  [translution]="--model translution --preset tiny --depth 4 --head-dim 32"
)
train_one() {  # NAME DATASET
  local name=$1 data=$2 start=$SECONDS run=$1$suffix-$2
  # One thread each (BLAS and the engine's split): the static and dynamic runs share the two cores.
  # shellcheck disable=SC2086
  OPENBLAS_NUM_THREADS=1 "$cli" train ${arch[$name]} --layout "$layout" --image 84 --patch 12 --matrix-threads 1 \
    --dataset "$data" --train-samples "$samples" --epochs "$epochs" --batch 64 --lr 1e-3 --warmup 100 --seed 1 \
    --eval-samples 1000 --no-final-eval --data-dir "$DATA_DIR" --out "$out/$run.ckpt" --json \
    >"$out/$run.log"
  echo $((SECONDS - start)) >"$out/$run.seconds"
}

for name in $models; do
  [ -n "${arch[$name]:-}" ] || die "unknown model '$name' (expected attention, lor or translution)"
  step "Protocol: $name on static and on dynamic ($samples digits, $epochs epoch(s)), in parallel"
  train_one "$name" static &
  static_pid=$!
  train_one "$name" dynamic &
  dynamic_pid=$!
  wait $static_pid && wait $dynamic_pid || die "training $name for the protocol failed (logs in $out)"
  step "Protocol: evaluating $name$suffix"
  "$cli" eval --protocol --checkpoint "$out/$name$suffix-static.ckpt" "$out/$name$suffix-dynamic.ckpt" \
    --data-dir "$DATA_DIR" --json | tee "$out/$name$suffix-protocol.json"
done
[ $sweeps = 1 ] || exit 0

for name in $models; do
  ckpt=$ROOT/resources/models/$name.ckpt
  [ -f "$ckpt" ] || { echo "skipping the sweep of $name: $ckpt is missing"; continue; }
  step "Sweep: bundled $name"
  "$cli" sweep --checkpoint "$ckpt" --digits 100 --stride 4 --out "$docs/sweep-$name" --data-dir "$DATA_DIR" --json \
    | tee "$out/sweep-$name.json"
done
