#!/usr/bin/env bash
# End-to-end checks of the `translution` executable, as a user would run it.
set -u
cli=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
check() {  # check NAME COMMAND...: runs the command, counts a failure if it fails
  local name=$1; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}

info=$("$cli" data info)
check "data info exits 0" test $? -eq 0
check "data info reports checksums passing" grep -q "all four files present, checksums pass" <<<"$info"
check "data info lists the four files" test "$(grep -c ' ok$' <<<"$info")" -eq 4
check "data info --json" bash -c "\"$cli\" data info --json | grep -q '\"ok\":true'"

check "render dynamic test 7" "$cli" data render --dataset dynamic --split test --index 7 --out "$work/a.png"
check "render again" "$cli" data render --dataset dynamic --split test --index 7 --out "$work/b.png"
check "same bytes twice" cmp -s "$work/a.png" "$work/b.png"
check "84x84 PNG" bash -c "file '$work/a.png' | grep -q 'PNG image data, 84 x 84'"
check "grid contact sheet" "$cli" data render --dataset moving --split train --index 0 --grid 4x8 --out "$work/g.png"
check "grid size" bash -c "file '$work/g.png' | grep -q 'PNG image data, 526 x 262'"

# A corrupt IDX file: one-line error naming the file, non-zero exit, nothing written.
mkdir -p "$work/bad"
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-labels-idx1-ubyte; do
  cp "$TRANSLUTION_DATA/$f" "$work/bad/$f"
done
head -c 100000 "$TRANSLUTION_DATA/t10k-images-idx3-ubyte" >"$work/bad/t10k-images-idx3-ubyte"
err=$("$cli" data render --data-dir "$work/bad" --dataset static --split test --index 0 --out "$work/c.png" 2>&1)
status=$?
check "corrupt file exits non-zero" test $status -ne 0
check "error names the file" grep -q "$work/bad/t10k-images-idx3-ubyte" <<<"$err"
check "error is one line" test "$(wc -l <<<"$err")" -eq 1
check "no output written" test ! -e "$work/c.png"
echo "$err"
check "info fails on corrupt dir" bash -c "! \"$cli\" data info --data-dir '$work/bad' >/dev/null"
check "unknown option is an error" bash -c "! \"$cli\" data render --datset static 2>/dev/null"

# Models: the list names every operator; info prints the paper's parameter counts.
check "model list has translution-qk" bash -c "\"$cli\" model list | grep -q '^  translution-qk '"
check "model info translution/12: 116.2 M" bash -c "\"$cli\" model info --model translution --preset A --image 84 --patch 12 | grep -q '(116.2 M)'"
check "model info lor/7: 8.3 M" bash -c "\"$cli\" model info --model lor --preset A --image 84 --patch 7 | grep -q '(8.3 M)'"
check "model info --json" bash -c "\"$cli\" model info --model attention --image 84 --patch 12 --json | grep -q '\"parameters\":2706346'"
err=$("$cli" model info --model attention --patch 13 2>&1)
check "bad patch exits non-zero" test $? -ne 0
check "bad patch says why" grep -q "patch size 13 does not divide the 84x84 image" <<<"$err"

# A tiny training-step benchmark: one JSON object with the figures the docs use.
bench=$("$cli" bench --model translution --preset tiny --image 28 --patch 7 --depth 1 --mode train --batch 2 --steps 1 --warmup 0 --json)
check "bench exits 0" test $? -eq 0
for key in ms_per_step images_per_second peak_memory_bytes exact_flops_per_image fraction_of_floor; do
  check "bench reports $key" grep -q "\"$key\":" <<<"$bench"
done
check "bench rejects a bad mode" bash -c "! \"$cli\" bench --model attention --mode sing 2>/dev/null"

echo "e2e_cli: $failures failed"
test $failures -eq 0
