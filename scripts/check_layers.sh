#!/usr/bin/env bash
# The engine's layers, checked from the source: each directory of core/ includes only
# the layers beneath it (util < cpu, gpu < nn < the rest; gpu wraps cuda's kernels), core/
# never includes Qt or the studio, and the operators in core/nn hold no raw-memory
# machinery (they ask core/cpu).
# Prints one line per breach and exits 1 if there is any.
# Usage: scripts/check_layers.sh [tree]   (default: this checkout)
set -uo pipefail
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
cd "$root/core" || { echo "no core/ directory under $root" >&2; exit 2; }
status=0
# report <message> <prefix>: one line per "file:line:text" on stdin, as "prefix/file:line: message: text"
report() {
  local place text
  while IFS= read -r line; do
    place=$(sed -E 's/^([^:]+:[0-9]+):.*/\1/' <<<"$line") text=${line#"$place":}
    echo "$2${place#./}: $1: $(sed -E 's/^\s+//' <<<"$text")"
    status=1
  done
}

# includes <dir> <allowed project directories, as a regex>: every "dir/x.h" include outside them
includes() {
  local dir=$1 allowed=$2
  [ -d "$dir" ] || return 0
  report "$dir/ may include only ${allowed//|/, }" core/ < <(
    grep -rnE '^\s*#\s*include\s+"[a-z_]+/' "$dir" --include='*.h' --include='*.cpp' --include='*.inc' |
      grep -vE "#\s*include\s+\"($allowed)/")
}
includes util 'util'
includes cpu 'cpu|util'
includes nn 'nn|cpu|util'
includes cuda 'cuda'
includes gpu 'gpu|cuda|util'
report "core/cuda is plain CUDA C++ over pointers: no LibTorch" core/ < <(
  grep -rnE '^\s*#\s*include\s+<(ATen|torch|c10)/' cuda --include='*.h' --include='*.cu' --include='*.cuh' 2>/dev/null)
report "the engine never includes Qt or the studio" core/ < <(
  grep -rnE '^\s*#\s*include\s+(<Q|"(ui|app|cli)/)' . --include='*.h' --include='*.cpp')
if [ -d nn ]; then
  report "core/nn is the maths; raw memory, dispatch and threads belong in core/cpu" core/ < <(
    grep -rnE 'data_ptr|accessor<|AT_DISPATCH|thread_local|report_kernel' nn --include='*.h' --include='*.cpp')
fi
exit $status
