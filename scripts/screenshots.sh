#!/usr/bin/env bash
# Regenerates the pictures in docs/screenshots with the built studio, offscreen, at
# 1280 x 800 (the sweep takes minutes on two cores; so does `experiment`, which trains).
#   scripts/screenshots.sh [PANEL...]   (default: every picture the docs show)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
studio=${TRANSLUTION_BUILD_DIR:-$ROOT/build}/app/translution-studio
[ -x "$studio" ] || { echo "error: $studio is not built (scripts/run.sh builds it)" >&2; exit 1; }
export QT_QPA_PLATFORM=offscreen TRANSLUTION_NO_DIALOGS=1

shot() {
  local name=$1; shift
  "$studio" --screenshot "$ROOT/docs/screenshots/$name.png" --dataset dynamic --index 7 "$@"
}

panels=("$@")
# `experiment` (the protocol trained here) is a panel too, drawn only on request.
[ ${#panels[@]} -gt 0 ] || panels=(window compare attention offsets knockout training robustness attribution sweep shift)
for panel in "${panels[@]}"; do
  case $panel in
    compare) shot compare --panel compare --slots 3 ;;  # three slots: the window as most people will use it
    *) shot "$panel" --panel "$panel" ;;
  esac
done
