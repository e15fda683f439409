#!/usr/bin/env bash
# Hostile-but-fair input to `translution`: devices, FIFOs, folders and links at
# output paths, endless or oversized inputs, damaged pictures and checkpoints,
# impossible numbers and broken promises on resume. Each case must end in one
# `error:` line (never a stack trace or an abort) within its own time and memory
# limit, and leave what stands at the paths as it was.
#   hostile_test.sh CLI            checks every case (ctest)
#   hostile_test.sh CLI --table    prints a row per case and checks nothing (for a
#                                  table of one build against another)
set -u
cli=$1
mode=${2:-check}
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"
seeds=$(cd "$(dirname "${BASH_SOURCE[0]}")/../fuzz/seeds" && pwd)
fixtures=$(cd "$(dirname "${BASH_SOURCE[0]}")/../fixtures/pytorch/data" && pwd)
cd "$work"
# A build without the input bounds would read /dev/zero until the machine runs out: cap it.
[ "$mode" = --table ] && ulimit -v 6000000

# One case: run COMMAND under GNU time; in check mode, demand a refusal (exit != 0),
# exactly one error line, no crash text, and the limits.
refused() {
  local name=$1 seconds=$2 mb=$3; shift 3
  local status elapsed kb lines
  local guard=()
  [ "$mode" = --table ] && guard=(timeout -s KILL 60)  # a build without the limits could run for minutes
  /usr/bin/time -f '%e %M' -o "$work/time" "${guard[@]}" "$@" >"$work/out" 2>"$work/err" </dev/null
  status=$?
  read -r elapsed kb < <(tail -n 1 "$work/time")  # after "Command exited with ..." when it failed
  [[ "$elapsed" =~ ^[0-9.]+$ && "$kb" =~ ^[0-9]+$ ]] || { elapsed=0; kb=0; }
  grep -v -E '^Command (exited|terminated)' "$work/err" >"$work/err.clean"
  local message
  message=$(grep -m1 '^error:' "$work/err.clean" || head -c 150 "$work/err.clean" | head -1)
  if [ "$mode" = --table ]; then
    printf '| %s | %s | %s | %s | %s |\n' "$name" "$status" "$elapsed" "$((kb / 1024))" "${message:0:140}"
    return
  fi
  lines=$(grep -c '^error:' "$work/err.clean")
  if [ "$status" -ne 0 ] && [ "$status" -lt 128 ] && [ "$lines" -eq 1 ] &&
     ! grep -q -E 'terminate called|Aborted|Segmentation|INTERNAL ASSERT|frame #|Exception raised' "$work/err.clean" &&
     awk -v e="$elapsed" -v s="$seconds" 'BEGIN { exit !(e <= s) }' && [ $((kb / 1024)) -le "$mb" ]; then
    echo "ok   $name (${elapsed} s, $((kb / 1024)) MB): $message"
  else
    echo "FAIL $name: exit $status, $lines error lines, ${elapsed} s of $seconds, $((kb / 1024)) MB of $mb"
    sed 's/^/     /' "$work/err.clean" | head -5
    failures=$((failures + 1))
  fi
}

# In check mode only: what stands at a path after a refused write.
still() { [ "$mode" = --table ] || check "$@"; }

tiny=(--model attention --preset tiny --image 28 --patch 7 --dataset mnist --no-final-eval)
"$cli" train "${tiny[@]}" --steps 2 --out a.ckpt >/dev/null 2>&1 || { echo "FAIL cannot train the fixture"; exit 1; }
"$cli" checkpoint strip a.ckpt --out weights.ckpt >/dev/null 2>&1
mkfifo fifo.ckpt fifo.png input-fifo.ckpt input-fifo.png  # the input- ones are never written to
mkdir folder.ckpt
[ "$(id -u)" -eq 0 ] && mknod null-device c 1 3
ln -s a.ckpt link.ckpt
cp "$seeds/image/digit-84.png" digit.png
cp digit.png padded.png && truncate -s 3G padded.png  # sparse: 3 GB on paper, nothing on disk
half() { head -c $(($(stat -c %s "$1") / 2)) "$1"; }
half "$seeds/image/digit-84.jpg" >truncated.jpg
half "$seeds/image/digit-84.png" >truncated.png
printf 'seven\n' >notes.png
{ head -c $(($(stat -c %s "$seeds/image/digit-84.jpg") * 2 / 3)) "$seeds/image/digit-84.jpg"; printf '\xff\xd9'; } >closed.jpg
mkdir fifo-mnist && mkfifo fifo-mnist/t10k-images-idx3-ubyte && : >fifo-mnist/t10k-labels-idx1-ubyte
mkdir zero-mnist && ln -s /dev/zero zero-mnist/t10k-images-idx3-ubyte && : >zero-mnist/t10k-labels-idx1-ubyte
head -c 4096 a.ckpt >truncated.ckpt
printf 'not a checkpoint' >garbage.ckpt
printf 'PK\003\004' >big-archive.pt && truncate -s 3G big-archive.pt  # sparse: an archive's start only
printf 'translution-checkpoint 1 bytes=10 md5=00000000000000000000000000000000\n' >big-format1.ckpt
truncate -s 3G big-format1.ckpt
printf 'junk' >junk.store
cp a.ckpt read-only.ckpt && chmod 444 read-only.ckpt
cp a.ckpt private.ckpt && chmod 600 private.ckpt

# Outputs: never replaced unless a regular file; checked before any work.
if [ -e null-device ]; then
  refused "train --out a character device" 2 500 "$cli" train "${tiny[@]}" --steps 1 --out null-device
  still "the device is still a device" test -c null-device
fi
refused "train --out a FIFO" 2 500 "$cli" train "${tiny[@]}" --steps 1 --out fifo.ckpt
still "the FIFO is still a FIFO" test -p fifo.ckpt
refused "train --out a folder" 2 500 "$cli" train "${tiny[@]}" --steps 1 --out folder.ckpt
still "the folder is still a folder" test -d folder.ckpt
refused "train --out in a missing folder" 2 500 "$cli" train "${tiny[@]}" --steps 1 --out missing/x.ckpt
still "no folder was made" test ! -e missing
refused "checkpoint strip --out a FIFO" 2 500 "$cli" checkpoint strip a.ckpt --out fifo.ckpt
refused "data render --out a FIFO" 2 500 "$cli" data render --dataset static --split test --index 0 --out fifo.png
refused "sweep --out in a missing folder" 2 500 "$cli" sweep --checkpoint a.ckpt --out missing/sweep
if [ -e null-device ]; then
  refused "import a non-archive --out a character device" 2 500 "$cli" import a.ckpt --model attention --out null-device
fi
refused "export to a folder" 2 500 "$cli" export a.ckpt --to pytorch folder.ckpt
refused "checkpoint strip --out a read-only file" 2 500 "$cli" checkpoint strip a.ckpt --out read-only.ckpt
still "the read-only file is as it was" cmp -s a.ckpt read-only.ckpt
refused "sweep --out ''" 2 500 "$cli" sweep --checkpoint a.ckpt --out ''
refused "sweep --out a folder's name" 2 500 "$cli" sweep --checkpoint a.ckpt --out folder.ckpt/
refused "predict --save-canvas with a missing checkpoint" 2 500 "$cli" predict --checkpoint missing.ckpt \
  --save-canvas canvases digit.png
still "no canvas folder was made" test ! -e canvases
refused "attribute --out with a missing picture" 2 500 "$cli" attribute --checkpoint a.ckpt --out maps missing.png
still "no attribution folder was made" test ! -e maps
refused "checkpoint strip --out its input" 2 500 "$cli" checkpoint strip a.ckpt --out a.ckpt
refused "export over its input through a link" 2 500 "$cli" export a.ckpt --to pytorch link.ckpt
still "the input is still a checkpoint" bash -c "'$cli' checkpoint info a.ckpt >/dev/null"
ln -s loop-b.ckpt loop-a.ckpt && ln -s loop-a.ckpt loop-b.ckpt
refused "checkpoint strip --out a loop of links" 2 500 "$cli" checkpoint strip a.ckpt --out loop-a.ckpt
still "the loop is still a link" test -L loop-a.ckpt

# Inputs: bounded before they are read.
refused "predict /dev/zero" 2 500 "$cli" predict --checkpoint a.ckpt /dev/zero
refused "predict a FIFO" 2 500 "$cli" predict --checkpoint a.ckpt input-fifo.png
refused "predict a folder" 2 500 "$cli" predict --checkpoint a.ckpt folder.ckpt
refused "predict a PNG padded to 3 GB" 2 500 "$cli" predict --checkpoint a.ckpt padded.png
refused "predict a truncated JPEG" 2 500 "$cli" predict --checkpoint a.ckpt truncated.jpg
refused "predict a truncated PNG" 2 500 "$cli" predict --checkpoint a.ckpt truncated.png
refused "predict a text file" 2 500 "$cli" predict --checkpoint a.ckpt notes.png
refused "predict with a missing checkpoint" 2 500 "$cli" predict --checkpoint missing.ckpt digit.png
refused "checkpoint info on a FIFO" 2 500 "$cli" checkpoint info input-fifo.ckpt
refused "checkpoint info on /dev/zero" 2 500 "$cli" checkpoint info /dev/zero
refused "checkpoint info on a truncated file" 2 500 "$cli" checkpoint info truncated.ckpt
refused "checkpoint info on garbage" 2 500 "$cli" checkpoint info garbage.ckpt
refused "predict with a truncated checkpoint" 2 500 "$cli" predict --checkpoint truncated.ckpt digit.png
refused "import a FIFO" 2 500 "$cli" import input-fifo.ckpt --model attention --out b.ckpt
refused "predict a cut JPEG closed with an end marker" 2 500 "$cli" predict --checkpoint a.ckpt closed.jpg
refused "MNIST images that are a FIFO" 2 500 "$cli" data render --dataset mnist --split test --out r.png \
  --data-dir fifo-mnist
refused "MNIST images that are /dev/zero" 2 500 "$cli" data render --dataset mnist --split test --out r.png \
  --data-dir zero-mnist
refused "import a 3 GB file that starts like an archive" 2 500 "$cli" import big-archive.pt --model attention \
  --out b.ckpt
refused "checkpoint upgrade of a 3 GB file with a format-1 header" 2 500 "$cli" checkpoint upgrade \
  big-format1.ckpt b.ckpt
refused "checkpoint upgrade of a 3 GB file without one" 2 500 "$cli" checkpoint upgrade padded.png b.ckpt
refused "train --master file:JUNK" 5 500 "$cli" train "${tiny[@]}" --steps 1 --world-size 2 --rank 0 \
  --master file:junk.store --timeout 3 --out b.ckpt
still "the junk is as it was" test "$(cat junk.store)" = junk
refused "train --master file:FOLDER" 5 500 "$cli" train "${tiny[@]}" --steps 1 --world-size 2 --rank 0 \
  --master file:folder.ckpt --timeout 3 --out b.ckpt
still "the folder is still a folder" test -d folder.ckpt

refused "an unknown command" 2 500 "$cli" $'\xff'
refused "an empty command" 2 500 "$cli" ''
refused "a path with a newline" 2 500 "$cli" checkpoint info $'two\nlines.ckpt'
still "its error is one line" test "$(wc -l <"$work/err.clean")" -eq 1

# Numbers: out of range is refused, not clamped.
refused "--steps 10^20" 2 500 "$cli" train "${tiny[@]}" --steps 99999999999999999999 --out b.ckpt
refused "--steps above 10^9" 2 500 "$cli" train "${tiny[@]}" --steps 1000000001 --out b.ckpt
refused "--epochs 2^62" 2 500 "$cli" train "${tiny[@]}" --epochs 4611686018427387904 --out b.ckpt
refused "--epochs 1e12" 2 500 "$cli" train "${tiny[@]}" --epochs 1e12 --train-samples 8 --out b.ckpt
refused "10^9 epochs of 8 digits" 2 500 "$cli" train "${tiny[@]}" --epochs 1000000000 --train-samples 8 \
  --batch 4 --out b.ckpt
refused "--batch 2^63" 2 500 "$cli" train "${tiny[@]}" --steps 1 --batch 9223372036854775808 --out b.ckpt
refused "--seed 2^64" 2 500 "$cli" train "${tiny[@]}" --steps 1 --seed 18446744073709551616 --out b.ckpt
refused "--world-size 0" 2 500 "$cli" train "${tiny[@]}" --steps 1 --world-size 0 --out b.ckpt
refused "sweep --digits beyond the test split" 2 500 "$cli" sweep --checkpoint a.ckpt --out s --digits 100000000
refused "--clip beyond a float" 2 500 "$cli" train "${tiny[@]}" --steps 1 --clip 1e39 --out b.ckpt
refused "--train-samples beyond the training split" 2 500 "$cli" train "${tiny[@]}" --steps 1 \
  --train-samples 100000000 --out b.ckpt
refused "--image 10^20" 2 500 "$cli" model info --model attention --image 99999999999999999999 --patch 4
refused "--dim 10^20" 2 500 "$cli" model info --model attention --dim 99999999999999999999
refused "eval --samples beyond the test split" 2 500 "$cli" eval --checkpoint a.ckpt --samples 100000000
refused "data render --seed 2^64" 2 500 "$cli" data render --dataset dynamic --split test --seed \
  18446744073709551616 --out r.png
refused "a studio bench of 10^6 canvases" 2 500 "$cli" bench --mode studio --steps 1000000 --checkpoints a.ckpt
refused "TRANSLUTION_THREADS=1000" 2 500 env TRANSLUTION_THREADS=1000 "$cli" model info --model attention
refused "TRANSLUTION_THREADS=abc" 2 500 env TRANSLUTION_THREADS=abc "$cli" model info --model attention
refused "--lr inf" 2 500 "$cli" train "${tiny[@]}" --steps 1 --lr inf --out b.ckpt
refused "--lr nan" 2 500 "$cli" train "${tiny[@]}" --steps 1 --lr nan --out b.ckpt
refused "--lr 0" 2 500 "$cli" train "${tiny[@]}" --steps 1 --lr 0 --out b.ckpt
refused "--lr in hexadecimal" 2 500 "$cli" train "${tiny[@]}" --steps 1 --lr 0x1p-3 --out b.ckpt
refused "sweep --out ." 2 500 "$cli" sweep --checkpoint a.ckpt --out . --digits 5
refused "TRANSLUTION_AVAILABLE_MEMORY=1e400" 2 500 env TRANSLUTION_AVAILABLE_MEMORY=1e400 "$cli" checkpoint info \
  a.ckpt
refused "TRANSLUTION_AVAILABLE_MEMORY=0x10" 2 500 env TRANSLUTION_AVAILABLE_MEMORY=0x10 "$cli" checkpoint info a.ckpt
cp a.ckpt own.csv
refused "sweep over the checkpoint it reads" 5 800 "$cli" sweep --checkpoint own.csv --out own --digits 2
still "the checkpoint is as it was" cmp -s a.ckpt own.csv
refused "checkpoint info with 1 MB available" 2 500 env TRANSLUTION_AVAILABLE_MEMORY=1000000 "$cli" checkpoint \
  info a.ckpt
still "it names no batch it never runs" bash -c "! grep -q 'at batch' '$work/err.clean'"
refused "import as a 4096x4096 model of 1-pixel patches" 2 500 "$cli" import "$fixtures/translution_kv_mnist.pt" \
  --model translution-kv --image 4096 --patch 1 --out b.ckpt
refused "eval --samples -1" 2 500 "$cli" eval --checkpoint a.ckpt --samples -1
refused "--matrix-threads 100000" 2 500 "$cli" bench --model attention --preset tiny --matrix-threads 100000
refused "model info --depth 10^15" 2 500 "$cli" model info --model attention --preset tiny --depth 1000000000000000
refused "data render --canvas 20000" 2 500 "$cli" data render --dataset static --split test --canvas 20000 \
  --out r.png
refused "a studio bench of 9 slots" 2 500 "$cli" bench --mode studio --steps 1 \
  --checkpoints a.ckpt,a.ckpt,a.ckpt,a.ckpt,a.ckpt,a.ckpt,a.ckpt,a.ckpt,a.ckpt
before=$(ls -d /tmp/translution-run-* 2>/dev/null | wc -l)
refused "--nproc 1000 on this machine" 2 500 "$cli" train "${tiny[@]}" --steps 1 --nproc 1000 --out b.ckpt
still "no rendezvous folder is left" test "$(ls -d /tmp/translution-run-* 2>/dev/null | wc -l)" -le "$before"

# Promises on resume.
refused "resume with --steps below the checkpoint's" 2 500 "$cli" train --resume a.ckpt --steps 1 --out b.ckpt
still "no checkpoint named by a refused run" test ! -e b.ckpt
refused "resume with another --model" 2 500 "$cli" train --resume a.ckpt --model lor --out b.ckpt
refused "resume with another --image" 2 500 "$cli" train --resume a.ckpt --image 84 --out b.ckpt
refused "resume with another --dataset" 2 500 "$cli" train --resume a.ckpt --dataset static --out b.ckpt
refused "--stop-at beyond --steps" 2 500 "$cli" train "${tiny[@]}" --steps 2 --stop-at 5 --out b.ckpt
refused "resume with --stop-at a step passed" 2 500 "$cli" train --resume a.ckpt --steps 4 --stop-at 1 \
  --out b.ckpt
refused "resume a weights-only file" 2 500 "$cli" train --resume weights.ckpt --steps 5 --out b.ckpt

# An output that is one of the command's inputs, reached through a link or named outright: the
# checkpoint or the MNIST files stand as they were. A refused run makes no folder.
cp a.ckpt ko-src.ckpt
mkdir ko mn
ln -s ../ko-src.ckpt ko/knockout-ko-src.csv
cp "$TRANSLUTION_DATA"/t10k-* mn/ && ln -s "$TRANSLUTION_DATA"/train-* mn/
refused "eval --knockout onto its checkpoint through a link" 5 800 "$cli" eval --checkpoint ko-src.ckpt \
  --knockout --samples 2 --out ko
still "the checkpoint is unchanged" cmp -s a.ckpt ko-src.ckpt
refused "train --out onto its MNIST labels" 5 800 "$cli" train "${tiny[@]}" --steps 1 --data-dir mn \
  --out mn/t10k-labels-idx1-ubyte
still "the labels are unchanged" cmp -s mn/t10k-labels-idx1-ubyte "$TRANSLUTION_DATA"/t10k-labels-idx1-ubyte
refused "attribute --class beyond the model's" 5 800 "$cli" attribute --checkpoint a.ckpt --class 10 \
  --out never-made digit.png
still "attribute made no folder" test ! -e never-made
refused "predict --save-canvas with every picture refused" 5 800 "$cli" predict --checkpoint a.ckpt \
  --save-canvas never-made notes.png
still "predict made no folder" test ! -e never-made
mkdir -p p1 p2 && cp digit.png p1/d.png && cp digit.png p2/d.png
refused "predict --save-canvas of two pictures of one name" 5 800 "$cli" predict --checkpoint a.ckpt \
  --save-canvas canvases p1/d.png p2/d.png

# A file name need not be UTF-8: --json writes U+FFFD for the bad byte, after the work.
if [ "$mode" != --table ]; then
  cp a.ckpt $'name\xff.ckpt'
  check "--json with a file name that is not UTF-8" bash -c \
    "'$cli' checkpoint info --json \$'name\\xff.ckpt' | grep -q '\"checkpoint\":\"name'"
fi

# A replaced file keeps its permissions: a private file stays private.
if [ "$mode" != --table ]; then
  check "checkpoint strip over a 0600 file" bash -c "'$cli' checkpoint strip a.ckpt --out private.ckpt >/dev/null"
  check "it is still 0600" test "$(stat -c %a private.ckpt)" = 600
fi

# A link is followed: the write goes to its target and the link stays.
if [ "$mode" != --table ]; then
  check "train --out a link writes its target" bash -c "'$cli' train --resume link.ckpt --steps 3 >/dev/null 2>&1"
  check "the link is still a link" test -L link.ckpt
  check "its target holds the new step" bash -c "'$cli' checkpoint info a.ckpt | grep -q 'step 3'"
  ln -s not-yet.ckpt dangling.ckpt
  check "--out a dangling link writes its target" "$cli" checkpoint strip a.ckpt --out dangling.ckpt
  check "the dangling link is still a link" test -L dangling.ckpt
  check "its target was written" test -f not-yet.ckpt
fi

[ "$mode" = --table ] || { echo "$failures failures"; [ "$failures" -eq 0 ]; }
