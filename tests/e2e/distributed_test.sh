#!/usr/bin/env bash
# Data-parallel training as a user runs it: `train --nproc 2` over loopback (c10d, Gloo)
# against one process at the same global batch; resuming with another number of ranks;
# a rank killed or hung mid-run; and the set-up mistakes that must be one-line errors.
# Usage: distributed_test.sh TRANSLUTION [equal|faults|errors]   (default: all three)
set -u
cli=$1
parts=${2:-"equal faults errors"}
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"
trap 'pkill -KILL -P $$ 2>/dev/null; rm -rf "$work"' EXIT  # and no run left behind
if ! "$cli" train --help | grep -q -- '--nproc'; then
  echo "FAIL train has no --nproc option"; exit 1
fi
# A build without Gloo (PyTorch's own LibTorch ships no Gloo headers) says so, and these checks skip.
probe=$("$cli" train --world-size 2 --rank 5 --master "file:$work/probe" --backend gloo --device cpu --out "$work/probe.ckpt" 2>&1)
if grep -q "no Gloo backend\|no distributed training" <<<"$probe"; then
  echo "skipped: $probe"; exit 77
fi

# A tiny model and short schedule; the global batch is 32 whatever the ranks.
tiny=(--model translution --preset tiny --image 28 --patch 7 --depth 1 --dataset mnist --train-samples 512
      --batch 32 --eval-samples 100 --no-final-eval --seed 3)
# AdamW hardly sees a gradient scaled as a whole (2 ranks each weighting by 1 instead of 1/2 moved
# the weights by 1e-7), so the 3-rank run, whose shares are uneven (11, 11, 10), is the one that
# proves the weighting: with every share weighted 1 its weights moved by 1.2e-3.
# Weights agree to this (largest |difference|, against weights of order 0.1-3): the ranks sum
# the batch's gradient in another order than one process, so float rounding differs.
tolerance=1e-5
within() {  # within A.ckpt B.ckpt: the weights differ by at most $tolerance
  local d
  d=$("$cli" checkpoint diff "$1" "$2" --json) || return 1
  echo "  $d"
  python3 -c "import json,sys; sys.exit(0 if json.loads(sys.argv[1])['max_abs_difference'] <= $tolerance else 1)" "$d"
}

if [[ " $parts " == *" equal "* ]]; then
  one=$("$cli" train "${tiny[@]}" --steps 6 --out "$work/one.ckpt" --json)
  check "one process, 6 steps" test $? -eq 0
  out=$("$cli" train "${tiny[@]}" --steps 6 --nproc 2 --out "$work/two.ckpt" --json 2>"$work/two.err")
  check "two processes, 6 steps" test $? -eq 0
  check "the last step's loss is the batch's, summed over the ranks" python3 -c "
import json, sys
a, b = (json.loads(x.splitlines()[-1])['last_loss'] for x in sys.argv[1:])
sys.exit(0 if abs(a - b) <= 1e-6 * abs(a) else 1)" "$one" "$out"
  check "the held-out accuracy is the ranks' shares summed" python3 -c "
import json, sys
a, b = (json.loads(x.splitlines()[-1])['held_out_accuracy'] for x in sys.argv[1:])
sys.exit(0 if a == b else 1)" "$one" "$out"
  check "rank 0 names the split" grep -q "data-parallel over 2 ranks (gloo): each step's 32 images split 16-16 a rank" "$work/two.err"
  check "rank 0 writes the JSON outcome, once" test "$(grep -c '"event":"finished"' <<<"$out")" -eq 1
  check "2 ranks give one process's weights" within "$work/one.ckpt" "$work/two.ckpt"
  # --force: more ranks than a small machine's cores are refused otherwise.
  check "three ranks share 32 images unevenly" "$cli" train "${tiny[@]}" --steps 6 --nproc 3 --force --out "$work/three.ckpt"
  check "3 ranks give one process's weights" within "$work/one.ckpt" "$work/three.ckpt"
  # Stopped at step 3 by two ranks and resumed by one, and the other way round: the same 6 steps.
  check "two ranks stop at step 3" "$cli" train "${tiny[@]}" --steps 6 --nproc 2 --stop-at 3 --out "$work/half.ckpt"
  check "the checkpoint holds step 3" bash -c "\"$cli\" checkpoint info --json '$work/half.ckpt' | grep -q '\"step\":3'"
  check "one process resumes it" "$cli" train --resume "$work/half.ckpt" --out "$work/resumed.ckpt" --no-final-eval
  check "2 then 1 ranks give one process's weights" within "$work/one.ckpt" "$work/resumed.ckpt"
  check "one process stops at step 3" "$cli" train "${tiny[@]}" --steps 6 --stop-at 3 --out "$work/half1.ckpt"
  check "two ranks resume it" "$cli" train --resume "$work/half1.ckpt" --nproc 2 --out "$work/resumed2.ckpt" --no-final-eval
  check "1 then 2 ranks give one process's weights" within "$work/one.ckpt" "$work/resumed2.ckpt"
fi

# Starts a long 2-rank run with a checkpoint every 5 steps and waits for the first one.
start_long_run() {
  local ckpt=$1; shift
  "$cli" train "${tiny[@]}" --steps 100000 --checkpoint-every 5 --nproc 2 --timeout 8 --out "$ckpt" "$@" \
    >/dev/null 2>"$work/long.err" &
  long_pid=$!
  for _ in $(seq 600); do [ -s "$ckpt" ] && break; sleep 0.1; done
  worker=$(pgrep -P "$long_pid" | head -1)
}
# Waits for the run's rank 0 to exit (at most $1 s); sets long_status and long_seconds.
await_long_run() {
  local t0=$SECONDS
  long_status=timeout
  for _ in $(seq $(($1 * 10))); do
    if ! kill -0 "$long_pid" 2>/dev/null; then wait "$long_pid"; long_status=$?; break; fi
    sleep 0.1
  done
  long_seconds=$((SECONDS - t0))
}

if [[ " $parts " == *" faults "* ]]; then
  start_long_run "$work/killed.ckpt"
  check "a long run wrote its first checkpoint" test -s "$work/killed.ckpt"
  check "rank 1 is a child of rank 0" test -n "$worker"
  kill -KILL "$worker"
  await_long_run 20
  cat "$work/long.err" | grep -v '^train ' | sed 's/^/  /'
  check "rank 0 exits non-zero when rank 1 is killed" bash -c "[ '$long_status' != timeout ] && [ '$long_status' -ne 0 ]"
  check "its error names rank 1 and the signal" grep -q "^error: rank 1 (pid [0-9]*) was killed by signal 9" "$work/long.err"
  check "its error is one line" test "$(grep -c '^error' "$work/long.err")" -eq 1
  check "the checkpoint is intact after the kill" "$cli" checkpoint info "$work/killed.ckpt" >/dev/null

  # Ctrl-C on rank 0 alone: the ranks agree to stop after the same step, and nothing is an error.
  start_long_run "$work/interrupted.ckpt"
  kill -INT "$long_pid"
  await_long_run 20
  check "Ctrl-C on rank 0 stops the run (exit 130)" test "$long_status" = 130
  check "no error after Ctrl-C" bash -c "! grep -q '^error' '$work/long.err'"
  check "rank 1 has exited too" bash -c "! kill -0 '$worker' 2>/dev/null"
  check "the checkpoint holds the last step" "$cli" checkpoint info "$work/interrupted.ckpt" >/dev/null

  start_long_run "$work/hung.ckpt"
  kill -STOP "$worker"
  await_long_run 40
  kill -KILL "$worker" 2>/dev/null
  cat "$work/long.err" | grep -v '^train ' | sed 's/^/  /'
  check "rank 0 exits non-zero when rank 1 hangs" bash -c "[ '$long_status' != timeout ] && [ '$long_status' -ne 0 ]"
  check "within the 8 s timeout and a margin ($long_seconds s)" test "$long_seconds" -le 30
  check "its error names rank 1, stopped" grep -q "^error: rank 1 (pid [0-9]*) is stopped by a signal; " "$work/long.err"
  check "the checkpoint is intact after the hang" "$cli" checkpoint info "$work/hung.ckpt" >/dev/null

  # Three ranks, the last one hung: its stopped heartbeat names it, and not the rank that waited with rank 0.
  start_long_run "$work/hung3.ckpt" --nproc 3 --force  # --force: three ranks on fewer cores
  last=$(pgrep -P "$long_pid" | sort -n | tail -1)
  kill -STOP "$last"
  await_long_run 40
  pkill -KILL -P "$long_pid" 2>/dev/null; kill -KILL "$last" 2>/dev/null
  grep '^error' "$work/long.err" | sed 's/^/  /'
  check "of three ranks, the hung one is named" grep -q "^error: rank 2 (pid [0-9]*) is stopped by a signal; " "$work/long.err"
  check "and only that one" bash -c "! grep -q 'rank 1' '$work/long.err'"
fi

one_line_error() {  # one_line_error PATTERN COMMAND...: fails non-zero with one line matching PATTERN
  local pattern=$1 err status; shift
  err=$("$@" 2>&1 >/dev/null); status=$?
  echo "  $err"
  [ $status -ne 0 ] && [ "$(grep -c . <<<"$err")" -eq 1 ] && grep -q -- "$pattern" <<<"$err"
}

if [[ " $parts " == *" errors "* ]]; then
  port=$((20000 + RANDOM % 20000))
  run=(--run-id "e2e-$$-0123456789abcdef")  # across machines every rank needs the run's id
  rank0=("$cli" train "${tiny[@]}" --steps 2 --world-size 2 --rank 0 --master "127.0.0.1:$port" --timeout 20 "${run[@]}")
  "${rank0[@]}" --out "$work/r0.ckpt" >/dev/null 2>"$work/r0.err" &
  r0=$!
  sleep 2
  check "a port in use is one line" one_line_error "port $port is in use" "${rank0[@]}" --out "$work/r0b.ckpt"
  check "a mismatched world size is one line" one_line_error "was started with --world-size" \
    "$cli" train "${tiny[@]}" --steps 2 --world-size 3 --rank 1 --master "127.0.0.1:$port" --timeout 20 "${run[@]}" \
    --out "$work/x.ckpt"
  wait $r0
  check "rank 0 names the mismatch too" grep -q "world-size" "$work/r0.err"
  "${rank0[@]}" --out "$work/r0.ckpt" >/dev/null 2>"$work/r0.err" &
  r0=$!
  sleep 1
  check "a mismatched config is one line naming it" one_line_error "configuration differs from rank 0's: depth=2 against depth=1" \
    "$cli" train "${tiny[@]}" --depth 2 --steps 2 --world-size 2 --rank 1 --master "127.0.0.1:$port" --timeout 20 \
    "${run[@]}" --out "$work/x.ckpt"
  wait $r0
  # Another copy of MNIST, one training label changed (still a digit): other data is refused too.
  cp -r "${TRANSLUTION_DATA:-$(dirname "${BASH_SOURCE[0]}")/../../data/mnist}" "$work/mnist-changed"
  printf '\x03' | dd of="$work/mnist-changed/train-labels-idx1-ubyte" bs=1 seek=8 conv=notrunc status=none
  "${rank0[@]}" --out "$work/r0.ckpt" >/dev/null 2>"$work/r0.err" &
  r0=$!
  sleep 1
  check "other MNIST files on a rank are one line naming them" one_line_error \
    "configuration differs from rank 0's: mnist_md5=[0-9a-f]* against mnist_md5=" \
    "$cli" train "${tiny[@]}" --data-dir "$work/mnist-changed" --steps 2 --world-size 2 --rank 1 \
    --master "127.0.0.1:$port" --timeout 20 "${run[@]}" --out "$work/x.ckpt"
  wait $r0
  rm -rf "$work/mnist-changed"
  check "an unreachable master is one line" one_line_error "cannot reach rank 0" \
    "$cli" train "${tiny[@]}" --steps 2 --world-size 2 --rank 1 --master "127.0.0.1:$((port + 1))" --timeout 3 \
    "${run[@]}" --out "$work/x.ckpt"
  check "a missing rank is one line" one_line_error "rank 1 did not join within 2 s" \
    "$cli" train "${tiny[@]}" --steps 2 --world-size 2 --rank 0 --master "127.0.0.1:$((port + 2))" --timeout 2 \
    "${run[@]}" --out "$work/x.ckpt"
  check "a master without a run id is one line" one_line_error "127.0.0.1:$port needs a run id: --run-id TEXT" \
    env -u TRANSLUTION_RUN_ID "$cli" train "${tiny[@]}" --steps 2 --world-size 2 --rank 1 --master "127.0.0.1:$port" \
    --out "$work/x.ckpt"
  check "a run id easily guessed is one line" one_line_error "of 4 characters is too easily guessed" \
    "$cli" train "${tiny[@]}" --steps 2 --world-size 2 --rank 1 --master "127.0.0.1:$port" --run-id abcd \
    --out "$work/x.ckpt"
  check "TRANSLUTION_RUN_ID gives it" one_line_error "cannot reach rank 0" env TRANSLUTION_RUN_ID=e2e-0123456789abcdef \
    "$cli" train "${tiny[@]}" --steps 2 --world-size 2 --rank 1 --master "127.0.0.1:$((port + 1))" --timeout 1 \
    --out "$work/x.ckpt"
  check "--nproc with --rank is one line" one_line_error "give either --nproc N" \
    "$cli" train "${tiny[@]}" --nproc 2 --rank 1 --world-size 2 --out "$work/x.ckpt"
  check "a rank past the world is one line" one_line_error "--rank 2 must be at least 0 and below --world-size 2" \
    "$cli" train "${tiny[@]}" --rank 2 --world-size 2 --master 127.0.0.1:1 --out "$work/x.ckpt"
  check "a bad master is one line" one_line_error "is not HOST:PORT or file:PATH" \
    "$cli" train "${tiny[@]}" --rank 0 --world-size 2 --master nowhere --out "$work/x.ckpt"
  check "nccl without CUDA is one line" one_line_error "NCCL\|nccl" \
    "$cli" train "${tiny[@]}" --nproc 2 --backend nccl --device cpu --out "$work/x.ckpt"
  check "no checkpoint from failed starts" test ! -e "$work/x.ckpt"
fi

echo "$failures failure(s)"
[ "$failures" -eq 0 ]
