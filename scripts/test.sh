#!/usr/bin/env bash
# The same set-up as run.sh, then every test (ctest): core unit tests (gtest),
# widget tests (QtTest, offscreen) and end-to-end tests of both executables.
# Exits non-zero if any test fails. Extra arguments go to ctest (e.g. -R canvas).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

step "Running tests"
ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout 900 -j"$(nproc)" "$@"
