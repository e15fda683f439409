#!/usr/bin/env bash
# Running out of memory while saving a checkpoint: the run ends with one `error:` line and a
# non-zero exit, never an abort, and the checkpoint file keeps what it held. The shortage is
# real (ulimit -v), at a limit this script searches for: one under which the model trains but
# the copy of the file that saving holds does not fit.
# Usage: out_of_memory_test.sh TRANSLUTION
set -u
cli=$1
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"

# A model whose checkpoint (weights and AdamW's moments, 233 MB) is large beside its training
# step, so that the limits under which it trains but cannot save span some 200 MB: wider than
# the search's last step, whatever the machine's baseline.
model=(--model translution --preset A --image 84 --patch 12 --depth 1 --train-samples 64 --batch 2 --steps 1
       --eval-samples 10 --no-final-eval)
"$cli" train "${model[@]}" --out "$work/kept.ckpt" >/dev/null 2>"$work/err"
check "a checkpoint to keep" test -s "$work/kept.ckpt"

# probe KB: trains into a copy of kept.ckpt under `ulimit -v KB`; sets status and outcome
# (saved, save-failed: out of memory while saving, failed: anything else). --force: the memory
# check counts the limit and would refuse the run before it starts (checked at the end).
probe() {
  cp "$work/kept.ckpt" "$work/probe.ckpt"
  (ulimit -v "$1" && exec "$cli" train "${model[@]}" --seed 5 --force --out "$work/probe.ckpt") \
    >/dev/null 2>"$work/err"
  status=$?
  if [ "$status" -eq 0 ]; then outcome=saved
  elif grep -q "^error: out of memory while saving" "$work/err"; then outcome=save-failed
  else outcome=failed; fi
}

# Less address space fails earlier, more succeeds: halve the range until a probe lands between.
low=500000 high=16000000 found=
while [ $((high - low)) -gt 32000 ]; do
  limit=$(((low + high) / 2))
  probe "$limit"
  echo "  ulimit -v $limit: $outcome (exit $status)"
  case $outcome in
    saved) high=$limit ;;
    failed) low=$limit ;;
    save-failed) found=$limit; break ;;
  esac
done
check "a limit under which training fits and saving does not" test -n "$found"
if [ -n "$found" ]; then
  sed 's/^/  /' "$work/err" | grep -v '^  train'
  check "the run exits 1, not an abort" test "$status" -eq 1
  check "with one error line" test "$(grep -c '^error' "$work/err")" -eq 1
  check "naming the file and that it was not written over" \
    grep -q "^error: out of memory while saving step 1 to $work/probe.ckpt .*: $work/probe.ckpt was not written over" "$work/err"
  check "and no stack trace" bash -c "! grep -q 'terminate called\|frame #\|Aborted\|std::bad_alloc' '$work/err'"
  check "the previous checkpoint is intact" cmp -s "$work/kept.ckpt" "$work/probe.ckpt"
  check "and reads as a checkpoint" bash -c "'$cli' checkpoint info '$work/probe.ckpt' >/dev/null"
  check "no temporary file is left beside it" test "$(ls "$work" | grep -c probe)" -eq 1
fi


# Without --force the run is refused before it starts, in one line that names the limit.
(ulimit -v "${found:-1000000}" && exec "$cli" train "${model[@]}" --out "$work/refused.ckpt") >/dev/null 2>"$work/err"
sed 's/^/  /' "$work/err"
check "without --force, the memory check refuses the run under the limit" \
  grep -q "^error: training .* is available (ulimit -v): .*--force" "$work/err"
check "and writes nothing" test ! -e "$work/refused.ckpt"

echo "$failures failure(s)"
[ "$failures" -eq 0 ]
