#!/usr/bin/env bash
# Fails, naming each file, where clang-format 14 would change a C++ file (.clang-format
# at the top of the tree). To fix them: scripts/check_format.sh --fix
# Usage: scripts/check_format.sh [--fix] [file...]   (default: every C++ file git tracks)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
fix=0
[ "${1:-}" = --fix ] && { fix=1; shift; }
tool=$(command -v clang-format-14 || true)
[ -n "$tool" ] || { echo "clang-format-14 is missing (Debian: apt-get install clang-format-14)" >&2; exit 2; }
if [ $# -eq 0 ]; then
  cd "$root"
  mapfile -t files < <(git ls-files -- '*.cpp' '*.h' '*.inc' '*.cu' '*.cuh')
else
  # Only C++ sources: clang-format would rewrite anything it is given (a Markdown
  # page becomes C++-shaped prose), so other files are named and left alone.
  files=()
  for f in "$@"; do
    case $f in
      *.cpp | *.h | *.inc | *.cu | *.cuh) files+=("$f") ;;
      *) echo "$f: not a C++ source: left alone" >&2 ;;
    esac
  done
fi
[ ${#files[@]} -gt 0 ] || exit 0
if [ $fix = 1 ]; then
  "$tool" -i --style="file:$root/.clang-format" "${files[@]}"
  exit
fi
bad=0
for f in "${files[@]}"; do
  if ! "$tool" --dry-run --Werror --style="file:$root/.clang-format" "$f" >/dev/null 2>&1; then
    echo "$f: not formatted (scripts/check_format.sh --fix $f)"
    bad=1
  fi
done
exit $bad
