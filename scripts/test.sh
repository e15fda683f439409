#!/usr/bin/env bash
# The same set-up as run.sh, then every test (ctest): core unit tests (gtest),
# widget tests (QtTest, offscreen), end-to-end tests of both executables, and the
# source checks (every C++ file formatted, the engine's layers kept).
# Exits non-zero if any test fails. Extra arguments go to ctest (e.g. -R canvas).
set -euo pipefail
export TRANSLUTION_SOURCE_CHECKS=1
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

step "Running tests"
ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout 900 -j"$(nproc)" "$@"
