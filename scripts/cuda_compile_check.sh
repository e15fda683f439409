#!/usr/bin/env bash
# Compiles the engine's CUDA sources (core/cuda/*.cu), or the files given, with nvcc for
# sm_90 (H100, H200) and sm_80 (A100), every warning an error: a kernel that would not
# build on a GPU machine fails here, on a machine without a GPU. nvcc is not a Debian
# package; the CUDA Toolkit puts it under /usr/local/cuda.
# Usage: scripts/cuda_compile_check.sh [FILE.cu...]
# Exit: 0 every file built for both; 1 one did not (nvcc's errors printed); 77 no nvcc.
# Environment: NVCC, the compiler (default: nvcc on the PATH, else /usr/local/cuda/bin/nvcc).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [ ! -x "$NVCC" ]; then
  echo "skipped: no nvcc found (set NVCC, or install the CUDA Toolkit under /usr/local/cuda)"
  exit 77
fi
files=("$@")
[ ${#files[@]} -gt 0 ] || files=("$ROOT"/core/cuda/*.cu)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
status=0
for file in "${files[@]}"; do
  for arch in 90 80; do
    if "$NVCC" -std=c++17 -I "$ROOT/core" -arch="sm_$arch" -Werror all-warnings -c "$file" \
      -o "$scratch/out.o" >"$scratch/log" 2>&1; then
      echo "${file#"$ROOT"/}: sm_$arch built"
    else
      echo "${file#"$ROOT"/}: sm_$arch failed:"
      cat "$scratch/log"
      status=1
    fi
  done
done
exit $status
