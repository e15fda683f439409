#!/usr/bin/env bash
# Quick start: install what is missing, fetch MNIST, build, start the studio.
# Extra arguments go to translution-studio (try --help).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

studio=$BUILD_DIR/app/translution-studio
[ -x "$studio" ] || die "the studio was not built (is TRANSLUTION_BUILD_GUI=OFF?)"
if [ -z "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -z "${QT_QPA_PLATFORM:-}" ] &&
   [[ " $* " != *" --screenshot"* ]] && [[ " $* " != *" --help "* ]]; then
  die "no display found (DISPLAY and WAYLAND_DISPLAY are unset).
Run this from a desktop session, or make a picture instead: scripts/run.sh --screenshot studio.png"
fi
step "Starting Translution Studio"
exec "$studio" --data-dir "$DATA_DIR" "$@"
