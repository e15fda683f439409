# Sourced by the end-to-end scripts: a scratch folder `$work`, removed on exit, and
# `check NAME COMMAND...`, which runs the command and counts a failure in `$failures` if it fails.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
check() {
  local name=$1; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}
