#!/usr/bin/env bash
# End-to-end checks of `translution-studio`: offscreen screenshots, and a real
# X window under xvfb-run.
set -u
studio=$1
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"

check "--help" bash -c "QT_QPA_PLATFORM=offscreen '$studio' --help | grep -q -- --screenshot"
QT_QPA_PLATFORM=offscreen "$studio" --screenshot "$work/window.png" --dataset dynamic --index 7 2>"$work/window.err"
check "window screenshot exits 0" test $? -eq 0
# Every plot is laid out before it paints: no painting into an empty buffer (Qt's QPainter warnings).
check "window screenshot paints no plot into an empty buffer" bash -c "! grep -q -E 'QPainter|inactive painter' '$work/window.err'"
check "window screenshot is a PNG" bash -c "file '$work/window.png' | grep -q 'PNG image data, 1280 x 800'"
QT_QPA_PLATFORM=offscreen "$studio" --screenshot "$work/canvas.png" --panel canvas --dataset static --index 0
check "canvas screenshot exits 0" test $? -eq 0
check "canvas screenshot is a PNG" bash -c "file '$work/canvas.png' | grep -q 'PNG image data'"
for panel in compare attention offsets; do
  QT_QPA_PLATFORM=offscreen "$studio" --screenshot "$work/$panel.png" --panel $panel --dataset dynamic --index 7 >/dev/null 2>&1
  check "$panel panel screenshot" bash -c "file '$work/$panel.png' | grep -q 'PNG image data, 1280 x 800'"
done
check "unknown panel is an error" bash -c "! QT_QPA_PLATFORM=offscreen '$studio' --screenshot '$work/x.png' --panel nope 2>/dev/null"
check "bad dataset is an error" bash -c "! QT_QPA_PLATFORM=offscreen '$studio' --screenshot '$work/x.png' --dataset cifar 2>/dev/null"
check "nothing written on error" test ! -e "$work/x.png"

if command -v xvfb-run >/dev/null; then
  QT_QPA_PLATFORM=xcb xvfb-run -a -s "-screen 0 1280x1024x24" "$studio" --screenshot "$work/x11.png" --dataset dynamic --index 3
  check "studio under xvfb-run" test $? -eq 0
  check "xvfb screenshot is a PNG" bash -c "file '$work/x11.png' | grep -q 'PNG image data'"
  # The one-click demo in a real X window: the button clicked, the centred-trained pair slid and evaluated.
  QT_QPA_PLATFORM=xcb xvfb-run -a -s "-screen 0 1280x1024x24" "$studio" --screenshot "$work/demo.png" --panel robustness \
    >"$work/demo.out" 2>"$work/demo.err"
  check "one-click demo under xvfb-run" test $? -eq 0
  check "demo loads the centred-trained pair" bash -c "grep -q 'slot A: :/models/translution-static.ckpt' '$work/demo.out' &&
    grep -q 'slot B: :/models/attention-static.ckpt' '$work/demo.out'"
  check "demo screenshot is a PNG" bash -c "file '$work/demo.png' | grep -q 'PNG image data, 1280 x 800'"
  check "demo prints no error" bash -c "! grep -q -i -E 'error|cannot|QPainter' '$work/demo.err'"
else
  echo "FAIL xvfb-run is not installed (scripts/test.sh installs xvfb)"
  failures=$((failures + 1))
fi

echo "e2e_studio: $failures failed"
test $failures -eq 0
