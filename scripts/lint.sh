#!/usr/bin/env bash
# clang-tidy 14 with the project's checks (.clang-tidy) over C++ sources, from the build's
# compile_commands.json, one file per core at a time. Each file is read with its precompiled
# header's source (core/torch_pch.h, ui/ui_pch.h) included first, as the build does, but not
# GCC's compiled form of it, which clang cannot read. Exits 1 if any check fires, naming the file, line and check.
# Usage: scripts/lint.sh [--all | --since COMMIT | FILE...]
#   default: the sources changed since the commit in .ci/lint-base, and those that include a
#   header changed since then (CI runs this); --all: every source the build compiles.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TRANSLUTION_BUILD_DIR:-$root/build}
tool=$(command -v clang-tidy-14 || true)
[ -n "$tool" ] || { echo "clang-tidy-14 is missing (Debian: apt-get install clang-tidy-14)" >&2; exit 2; }
cd "$root"

# The sources changed since a commit, and the sources including a header changed since then.
changed_since() {
  git cat-file -e "$1^{commit}" 2>/dev/null || { echo "lint: no commit $1 in this history" >&2; exit 2; }
  git diff --name-only "$1" -- '*.cpp' '*.h' | while read -r f; do
    [ -f "$f" ] || continue
    case $f in
      *.cpp) echo "$f" ;;
      *.h) git grep -l -F "\"${f#*/}\"" -- '*.cpp' ;;
    esac
  done
}

case ${1:-} in
  --all) mapfile -t files < <(git ls-files -- '*.cpp') ;;
  --since) mapfile -t files < <(changed_since "$2") ;;
  "") mapfile -t files < <(changed_since "$(cat .ci/lint-base)") ;;
  *) files=("$@") ;;
esac
mapfile -t files < <(printf '%s\n' "${files[@]}" | grep -E '\.cpp$' | sort -u)
if [ ${#files[@]} -eq 0 ]; then
  echo "lint: no C++ source to check"
  exit 0
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
if [ -f "$build/compile_commands.json" ]; then
  python3 - "$build/compile_commands.json" "$scratch/compile_commands.json" <<'PY'
import json, os, re, sys
def source_header(match):  # CMake's cmake_pch.hxx includes the named header: include that instead
    hxx = match.group(1)
    found = re.search(r'#include "([^"]+)"', open(hxx).read()) if os.path.exists(hxx) else None
    return " -include " + found.group(1) if found else ""
commands = json.load(open(sys.argv[1]))
for c in commands:
    c["command"] = re.sub(r" -include (\S*cmake_pch\.hxx)", source_header, c["command"]).replace(" -Winvalid-pch", "")
json.dump(commands, open(sys.argv[2], "w"))
PY
else
  echo "[]" >"$scratch/compile_commands.json"
fi

# lint_one FILE: its findings into scratch/N.out (a file outside the tree, such as the checks'
# own test, with standard flags; a tree file the build does not compile is skipped).
lint_one() {
  local f=$1 path out
  path=$(realpath -m "$f") out="$scratch/$(printf '%s' "$f" | md5sum | cut -c1-16).out"
  if grep -qF "\"$path\"" "$scratch/compile_commands.json"; then
    "$tool" -p "$scratch" --quiet --extra-arg=-Wcomma "$path" >"$out.raw" 2>&1
  elif [[ $path == "$root"/* ]]; then
    echo "lint: $f is not in the build (a GUI file with the GUI off?): skipped" >"$out"
    return
  else
    "$tool" --config-file="$root/.clang-tidy" --quiet "$path" -- -std=c++17 -Wall -Wextra -Wcomma >"$out.raw" 2>&1
  fi
  local status=$?
  grep -E ': (warning|error):' "$out.raw" | sed "s#^$root/##" >"$out"
  [ $status -eq 0 ] || [ -s "$out" ] || { echo "$f: clang-tidy failed:"; cat "$out.raw"; } >"$out"
}
export -f lint_one
export tool root scratch
echo "lint: ${#files[@]} files"
printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -I{} bash -c 'lint_one "$1"' _ {}
findings=$(cat "$scratch"/*.out 2>/dev/null | sort -u)
[ -n "$findings" ] && echo "$findings"
grep -qE ': (warning|error):|clang-tidy failed' <<<"$findings" && exit 1
exit 0
