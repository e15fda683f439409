#!/usr/bin/env bash
# Regenerates the studio's bundled models, resources/models/NAME.ckpt: three small ViTs
# (Translution, LoR-Translution, self-attention) trained on dynamic MNIST (the digit
# anywhere on the 84x84 canvas, patch 12), and the same three architectures trained on
# static MNIST (the digit centred), NAME-static, for the papers' Static->Dynamic test.
# Each is trained by `translution train` with a fixed seed, then stripped of its
# training state (`translution checkpoint strip`). Full checkpoints, logs and the final
# test accuracies stay in runs/. The dynamic models take about three hours of CPU on the
# 2-core machine, the static ones about one (docs/results.md has the times).
# Usage: scripts/train_pretrained.sh [NAME ...]   (default: all six)
#   NAME: translution, lor, attention, translution-static, lor-static, attention-static
# Environment: THREADS=1 keeps each run on one core (BLAS and the engine), for two
# invocations side by side on a 2-core machine (after the first has built).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cli=$BUILD_DIR/app/translution
mkdir -p "$ROOT/runs" "$ROOT/resources/models"

# name, then the model, data and schedule; every run: batch 64, AdamW lr 1e-3 (warm-up
# 200 steps, cosine to 0), weight decay 0.05, clip 1.0, seed 1.
# Translution is 4 blocks with 32-wide heads: its 3 x 172 matrices per block are what
# fill the 20 MB budget, and four narrow blocks learn faster than two wide ones.
declare -A recipe=(
  [translution]="--model translution --preset tiny --depth 4 --head-dim 32 --dataset dynamic --epochs 6 --stop-at 2340"
  [lor]="--model lor --preset tiny --depth 4 --dataset dynamic --epochs 3"
  [attention]="--model attention --preset tiny --depth 6 --dataset dynamic --epochs 6"
  # Centred digits are learnt in far fewer steps: two epochs each, the same schedule for
  # all three so that their Static->Dynamic accuracies compare like for like.
  [translution-static]="--model translution --preset tiny --depth 4 --head-dim 32 --dataset static --epochs 2"
  [lor-static]="--model lor --preset tiny --depth 4 --dataset static --epochs 2"
  [attention-static]="--model attention --preset tiny --depth 6 --dataset static --epochs 2"
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
threads=()
if [ -n "${THREADS:-}" ]; then
  export OPENBLAS_NUM_THREADS=$THREADS
  threads=(--matrix-threads "$THREADS")
fi
train_one() {
  local name=$1
  step "Training $name (${recipe[$name]})"
  # shellcheck disable=SC2086
  "$cli" train ${recipe[$name]} --image 84 --patch 12 --batch 64 --lr 1e-3 --warmup 200 \
    --seed 1 --eval-samples 1000 "${threads[@]}" --data-dir "$DATA_DIR" --out "$ROOT/runs/$name-full.ckpt" --json \
    | tee "$ROOT/runs/$name.log"
  local stage steps options
  local -a stages
  IFS='|' read -r -a stages <<<"${extend[$name]:-}"
  for stage in "${stages[@]}"; do
    steps=${stage%% *} options=""
    [ "$stage" = "$steps" ] || options=${stage#* }
    step "Continuing $name to $steps steps (warm restart${options:+, $options})"
    # shellcheck disable=SC2086
    "$cli" train --resume "$ROOT/runs/$name-full.ckpt" --steps "$steps" $options "${threads[@]}" --data-dir "$DATA_DIR" --json \
      | tee -a "$ROOT/runs/$name.log"
  done
  "$cli" checkpoint strip "$ROOT/runs/$name-full.ckpt" --out "$ROOT/resources/models/$name.ckpt"
  local dataset=dynamic
  [[ $name != *-static ]] || dataset=static
  "$cli" eval --checkpoint "$ROOT/resources/models/$name.ckpt" --dataset "$dataset" --data-dir "$DATA_DIR" --json \
    | tee "$ROOT/runs/$name-eval.json"
}

names=("$@")
[ ${#names[@]} -gt 0 ] || names=(translution lor attention translution-static lor-static attention-static)
for name in "${names[@]}"; do
  [ -n "${recipe[$name]:-}" ] || die "unknown model '$name' (expected translution, lor, attention or one of them with -static)"
  train_one "$name"
done
