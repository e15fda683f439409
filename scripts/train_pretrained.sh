#!/usr/bin/env bash
# Regenerates the studio's bundled models, resources/models/{translution,lor,attention}.ckpt:
# small ViTs trained on dynamic MNIST (84x84, patch 12) by `translution train` with
# fixed seeds, then stripped of their training state (`translution checkpoint strip`).
# Full checkpoints, logs and the final test accuracies stay in runs/.
# Takes about three hours of CPU on the 2-core machine (docs/results.md has the times).
# Usage: scripts/train_pretrained.sh [translution|lor|attention ...]   (default: all three)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cli=$BUILD_DIR/app/translution
mkdir -p "$ROOT/runs" "$ROOT/resources/models"

# name, then the model and schedule; every run: dynamic MNIST, batch 64, AdamW lr 1e-3
# (warm-up 200 steps, cosine to 0), weight decay 0.05, clip 1.0, seed 1.
# Translution is 4 blocks with 32-wide heads: its 3 x 172 matrices per block are what
# fill the 20 MB budget, and four narrow blocks learn faster than two wide ones.
declare -A recipe=(
  [translution]="--model translution --preset tiny --depth 4 --head-dim 32 --epochs 6 --stop-at 2340"
  [lor]="--model lor --preset tiny --depth 4 --epochs 3"
  [attention]="--model attention --preset tiny --depth 6 --epochs 6"
)
# Runs that continue after their first cosine cycle with warm restarts, separated by
# '|': each stage is `train --resume --steps N [options]` (the schedule restarts its
# cosine from where N puts the current step, then decays to 0 again).
# --fresh-positions: new digit positions every epoch from then on. Translution's first
# run stops at step 2340 of its 6 epochs (--stop-at) and its same schedule goes on
# with fresh positions (5628 = 6 epochs, so the cosine is unchanged).
declare -A extend=(
  [translution]="5628 --fresh-positions"
  [lor]="4690|9380|12194 --fresh-positions"
)
train_one() {
  local name=$1
  step "Training $name (${recipe[$name]})"
  # shellcheck disable=SC2086
  "$cli" train ${recipe[$name]} --image 84 --patch 12 --dataset dynamic --batch 64 --lr 1e-3 --warmup 200 \
    --seed 1 --eval-samples 1000 --data-dir "$DATA_DIR" --out "$ROOT/runs/$name-full.ckpt" --json \
    | tee "$ROOT/runs/$name.log"
  local stage steps options
  local -a stages
  IFS='|' read -r -a stages <<<"${extend[$name]:-}"
  for stage in "${stages[@]}"; do
    steps=${stage%% *} options=""
    [ "$stage" = "$steps" ] || options=${stage#* }
    step "Continuing $name to $steps steps (warm restart${options:+, $options})"
    # shellcheck disable=SC2086
    "$cli" train --resume "$ROOT/runs/$name-full.ckpt" --steps "$steps" $options --data-dir "$DATA_DIR" --json \
      | tee -a "$ROOT/runs/$name.log"
  done
  "$cli" checkpoint strip "$ROOT/runs/$name-full.ckpt" --out "$ROOT/resources/models/$name.ckpt"
  "$cli" eval --checkpoint "$ROOT/resources/models/$name.ckpt" --dataset dynamic --data-dir "$DATA_DIR" --json \
    | tee "$ROOT/runs/$name-eval.json"
}

names=("$@")
[ ${#names[@]} -gt 0 ] || names=(translution lor attention)
for name in "${names[@]}"; do
  [ -n "${recipe[$name]:-}" ] || die "unknown model '$name' (expected translution, lor or attention)"
  train_one "$name"
done
