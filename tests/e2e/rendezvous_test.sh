#!/usr/bin/env bash
# The rendezvous of a run across machines (`train --master HOST:PORT`) against what is not
# rank 0: a process at the master's address that answers HTTP, junk bytes, a huge length, a
# protocol of another version, or nothing. Each must stop a rank within --timeout and a margin,
# in one `error:` line naming the address, without growing its memory. Then a rank 0 of another
# run id, a rank 0 that keeps admitting its ranks while others knock, an admitted process that
# sends junk to rank 0's store, and rendezvous files that are not the run's own or go bad.
# Usage: rendezvous_test.sh TRANSLUTION
set -u
cli=$1
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"
started=()  # the processes this script starts, ended by their id on exit
trap 'for p in "${started[@]}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$work"' EXIT
stop() { kill -KILL "$1" 2>/dev/null; wait "$1" 2>/dev/null; }  # a process this script started, quietly
one_line() {  # one_line PATTERN COMMAND...: fails non-zero with one line matching PATTERN
  local pattern=$1 err status; shift
  err=$(timeout 60 "$@" 2>&1 >/dev/null); status=$?
  echo "  $err"
  [ $status -ne 0 ] && [ $status -ne 124 ] && [ "$(grep -c . <<<"$err")" -eq 1 ] && grep -q -- "$pattern" <<<"$err"
}

probe=$("$cli" train --world-size 2 --rank 5 --master "file:$work/probe" --backend gloo --device cpu --out "$work/probe.ckpt" 2>&1)
if grep -q "no Gloo backend\|no distributed training" <<<"$probe"; then
  echo "skipped: $probe"; exit 77
fi
if [ ! -x /usr/bin/time ]; then echo "skipped: no /usr/bin/time to measure time and memory"; exit 77; fi

tiny=(--model translution --preset tiny --image 28 --patch 7 --depth 1 --dataset mnist --train-samples 64
      --batch 8 --steps 2 --eval-samples 10 --no-final-eval --seed 3)

# A process at the master's address that is not rank 0: it accepts connections on a free port
# of 127.0.0.1 (written to $2), sends each the answer of mode $1, and holds it open.
cat >"$work/impostor.py" <<'EOF'
import os, socket, sys, time
mode, port_file = sys.argv[1], sys.argv[2]
answers = {
    "http": b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 2\r\n\r\nhi",
    "junk": b"\x01" * 64,
    "bomb": b"\xff" * 8 + b"\x7f" * 56,  # the largest length there is, where c10d reads one
    "version": b"TRNSLRDV" + (99).to_bytes(4, "big") + bytes(60),  # the magic, then protocol 99
    "silent": b"",
}
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(8)
with open(port_file + ".part", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(port_file + ".part", port_file)
held = []
while True:
    c, _ = s.accept()
    c.sendall(answers[mode])
    held.append(c)
EOF

# Starts an impostor of mode $1; sets impostor_port.
start_impostor() {
  rm -f "$work/port"
  python3 "$work/impostor.py" "$1" "$work/port" &
  impostor=$!
  started+=($impostor)
  for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
  impostor_port=$(cat "$work/port")
}

# rank1_against MODE PATTERN: rank 1 meets an impostor of MODE: non-zero exit, one `error:` line naming the
# address and matching PATTERN, within 5 s (--timeout 3) and under 500 MB.
rank1_against() {
  local mode=$1 pattern=$2 status seconds kb lines
  start_impostor "$mode"
  local master="127.0.0.1:$impostor_port"
  /usr/bin/time -f '%e %M' -o "$work/time" timeout 30 "$cli" train "${tiny[@]}" --out "$work/x.ckpt" \
    --world-size 2 --rank 1 --master "$master" --timeout 3 --run-id x-0123456789abcdef >/dev/null 2>"$work/err"
  status=$?
  stop "$impostor"
  read -r seconds kb < <(tail -1 "$work/time")
  lines=$(grep -c . "$work/err")
  echo "  $mode: exit $status, ${seconds} s, $((kb / 1024)) MB: $(head -c 300 "$work/err")"
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ] && [ "$lines" -eq 1 ] && grep -q "^error: .*$master" "$work/err" &&
    grep -q -- "$pattern" "$work/err" && python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 5 else 1)" "$seconds" &&
    [ "$kb" -lt 500000 ]
}

check "an HTTP server at the master's address" rank1_against http 'is not a Translution rank 0 (it sent "HTTP/1.1 200 OK'
check "64 bytes of 0x01 there" rank1_against junk 'is not a Translution rank 0 (it sent "\\x01\\x01'
check "a huge length there" rank1_against bomb 'is not a Translution rank 0 (it sent "\\xff\\xff'
check "a rank 0 of another protocol version" rank1_against version 'speaks rendezvous protocol 99 and this rank [0-9]'
check "a port that accepts and never answers" rank1_against silent 'gave no rendezvous answer within 3 s'
check "no checkpoint from a refused rank" test ! -e "$work/x.ckpt"

port=$((20000 + RANDOM % 20000))
master="127.0.0.1:$port"
rank=("$cli" train "${tiny[@]}" --world-size 2 --master "$master")

# Rank 0 of another run: it turns rank 1 away at once, and names it when its own wait ends.
"${rank[@]}" --rank 0 --run-id ours-0123456789abcdef --timeout 6 --out "$work/r0.ckpt" >/dev/null 2>"$work/r0.err" &
r0=$!
started+=($r0)
sleep 1
/usr/bin/time -f '%e %M' -o "$work/time" timeout 30 "${rank[@]}" --rank 1 --run-id theirs-0123456789abcdef --timeout 3 \
  --out "$work/r1.ckpt" >/dev/null 2>"$work/r1.err"
status=$?
echo "  another run id: exit $status, $(tail -1 "$work/time"): $(cat "$work/r1.err")"
check "a rank of another run id is refused" test "$status" -ne 0
check "in one line naming the address and the run id" bash -c \
  "[ \$(grep -c . '$work/r1.err') -eq 1 ] && grep -q '^error: --master $master: rank 0 there runs with another run id' '$work/r1.err'"
wait $r0
status=$?
echo "  its rank 0: exit $status: $(cat "$work/r0.err")"
check "rank 0 names what it turned away when rank 1 never came" bash -c \
  "[ $status -ne 0 ] && grep -q '^error: rank 1 did not join within 6 s (2 ranks expected at $master); turned away: 127.0.0.1:[0-9]* left when asked to prove the run id (another run id?)' '$work/r0.err'"

# Starts rank 0 of a 2-rank run of id "ours" on the next port, --timeout $1; sets master,
# rank (the command of a rank, less --rank) and r0.
start_rank0() {
  port=$((port + 1))
  master="127.0.0.1:$port"
  rank=("$cli" train "${tiny[@]}" --world-size 2 --master "$master" --run-id ours-0123456789abcdef --timeout "$1")
  "${rank[@]}" --rank 0 --out "$work/r0.ckpt" >/dev/null 2>"$work/r0.err" &
  r0=$!
  started+=($r0)
}

# A rank 0 at which a silent client and an HTTP client knock first still admits its rank 1.
start_rank0 20
sleep 1
python3 -c "
import socket, sys, time
silent = socket.create_connection(('127.0.0.1', $port))
http = socket.create_connection(('127.0.0.1', $port))
http.sendall(b'GET / HTTP/1.1\r\nHost: x\r\n\r\n')
time.sleep(30)" &
knocker=$!
started+=($knocker)
sleep 0.5
timeout 60 "${rank[@]}" --rank 1 --out "$work/r1.ckpt" >/dev/null 2>"$work/r1.err"
status=$?
wait $r0
r0_status=$?
stop "$knocker"
check "rank 1 trains beside the knocking clients" test "$status" -eq 0
check "and rank 0 with it" test "$r0_status" -eq 0
check "rank 0 wrote the checkpoint" bash -c "'$cli' checkpoint info '$work/r0.ckpt' >/dev/null"

# Rank 0 serves its store on the connections it admitted, and on no port of its own. A process
# that knows the run id (it proves it as the handshake asks, written here in Python) and is
# admitted as rank 1, then sends what is not a store request, is cut off; rank 0 stops in one
# line that names it, when its wait for rank 1's hello ends.
start_rank0 3
sleep 0.5
python3 - "$port" <<'EOF2'
import hashlib, hmac, os, socket, struct, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
mine = os.urandom(16)
s.sendall((b"TRNSLRDV" + struct.pack(">III", 3, 1, 2) + mine).ljust(64, b"\0"))
reply = b""
while len(reply) < 72:
    reply += s.recv(72 - len(reply))
theirs = reply[20:36]
proof = hmac.new(b"ours-0123456789abcdef", b"translution rendezvous: rank" + mine + theirs + struct.pack(">II", 1, 2),
                 hashlib.sha256).digest()
s.sendall(b"TRNSLRDV" + proof)
verdict = s.recv(16)
s.sendall(b"\xff" * 16)  # a request header of the largest sizes there are
time.sleep(1)
EOF2
wait $r0
r0_status=$?
echo "  rank 0: exit $r0_status after $SECONDS s of this script: $(cat "$work/r0.err")"
check "an admitted process that sends junk is cut off, and rank 0 names it in one line" bash -c \
  "[ $r0_status -eq 1 ] && [ \$(grep -c . '$work/r0.err') -eq 1 ] &&
  grep -q '^error: rank 1 did not join within 3 s (2 ranks expected at $master); cut off: rank 1 (127.0.0.1:[0-9]*) sent what is not a store request (request 4294967295 is not one of the store.s)' '$work/r0.err'"

# The rendezvous file (--master file:PATH): what is there must be this user's regular file of
# c10d's records, and one that goes bad mid-run ends each rank in one line, not an abort.
file_rank=("$cli" train "${tiny[@]}" --world-size 2 --timeout 5 --out "$work/f.ckpt")
ln -s "$work/elsewhere" "$work/link"
check "a link as the file is one line" one_line "is a link: name the rendezvous file itself" \
  "${file_rank[@]}" --rank 0 --master "file:$work/link"
check "and nothing is made where it points" test ! -e "$work/elsewhere"
: >"$work/shared"
chmod 664 "$work/shared"
check "a file others may write is one line" one_line "may be written by users other than its owner" \
  "${file_rank[@]}" --rank 0 --master "file:$work/shared"
python3 -c "
import struct, sys
record = lambda b: struct.pack('=I', len(b)) + b
open(sys.argv[1], 'wb').write(record(b'/translution/hello/1') + record(b'x\nforged'))" "$work/forged"
check "a hello that is not one is one line" one_line "what rank 1 announced in the rendezvous store is not a world size" \
  "${file_rank[@]}" --rank 0 --master "file:$work/forged"
check "a file the store cannot seek is one line" one_line "the rendezvous file failed while the ranks met" \
  "${file_rank[@]}" --rank 0 --master file:/proc/self/status
rm -f "$work/f.ckpt"
for r in 0 1; do
  timeout 120 "$cli" train "${tiny[@]}" --steps 100000 --checkpoint-every 5 --world-size 2 --rank $r --timeout 5 \
    --master "file:$work/meet" --out "$work/long$r.ckpt" >/dev/null 2>"$work/long$r.err" &
  long[$r]=$!
  started+=(${long[$r]})
done
for _ in $(seq 300); do [ -s "$work/long0.ckpt" ] && break; sleep 0.1; done
check "the rendezvous file the ranks made is this user's alone" test "$(stat -c %a "$work/meet")" = 600
# The ranks write the file many times a second and recreate it at once: remove and make the
# folder until the folder wins, however busy the machine.
for _ in $(seq 1000); do rm -f "$work/meet"; mkdir "$work/meet" 2>/dev/null && break; done
check "the file was replaced by a folder" test -d "$work/meet"
wait "${long[0]}"; s0=$?
wait "${long[1]}"; s1=$?
echo "  file replaced by a folder: exits $s0 $s1: $(grep -h -v '^train\|^note\|^data\|^each\|^step' "$work"/long?.err)"
check "a file replaced by a folder mid-run ends each rank in one line" bash -c \
  "[ $s0 -eq 4 ] && [ $s1 -eq 4 ] && [ \$(cat '$work/long0.err' '$work/long1.err' | grep -c '^error') -eq 2 ] &&
   ! grep -q 'terminate' '$work/long0.err' '$work/long1.err'"
check "rank 0's checkpoint is intact" bash -c "'$cli' checkpoint info '$work/long0.ckpt' >/dev/null"

echo "$failures failure(s)"
[ "$failures" -eq 0 ]
