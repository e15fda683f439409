#!/usr/bin/env bash
# Measures the table of docs/performance.md: one JSON line per measurement.
# Usage: bench/run_benchmarks.sh [build-dir] [--compare] > results.jsonl
#   The table's six rows (ViT-A/12 at 84x84: one image, and a training step at batch 32, for
#   translution, lor and attention) take a few minutes on 2 cores. With --compare, the rows that
#   alternate two settings step by step in one process (`translution bench --compare X`) follow.
# OpenBLAS picks its kernels for the CPU unless $OPENBLAS_CORETYPE names some; the table is measured
# with it unset (`env -u OPENBLAS_CORETYPE bench/run_benchmarks.sh`), as on a fresh Debian machine.
set -euo pipefail
build=build
compare=0
for arg in "$@"; do
  case $arg in
    --compare) compare=1 ;;
    -h | --help) sed -n '2,8p' "$0"; exit 0 ;;
    *) build=$arg ;;
  esac
done
cli=$build/app/translution
if [ -n "${OPENBLAS_CORETYPE+set}" ]; then
  echo "note: OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE is set: OpenBLAS runs those kernels, not its own choice" >&2
fi
common=(--preset A --image 84 --patch 12)
infer() { "$cli" bench --model "$1" "${common[@]}" --mode infer --batch 1 "${@:2}" --json; }
train() {  # Translution's step takes seconds: fewer steps
  local steps=4
  [ "$1" = translution ] && steps=3
  "$cli" bench --model "$1" "${common[@]}" --mode train --batch 32 --steps "$steps" --warmup 1 "${@:2}" --json
}

# The table: one image, then a training step at batch 32.
for m in translution lor attention; do infer "$m" --steps 20; done
for m in translution lor attention; do train "$m"; done

[ "$compare" = 1 ] || exit 0

# The engine's kernels against the plain LibTorch-ops reference.
for m in translution lor attention; do
  infer "$m" --steps 20 --compare kernels
  train "$m" --compare kernels
done
# Mixed precision (bfloat16 products, fp32 sums) against fp32, where the CPU multiplies bfloat16 (AMX
# tiles or AVX512-BF16); one image reads Translution's offset matrices as bfloat16 copies (AVX-512).
if grep -q -E ' (amx_bf16|avx512_bf16) ' /proc/cpuinfo; then
  for m in translution lor attention; do train "$m" --precision bf16 --compare precision; done
fi
if grep -q ' avx512f ' /proc/cpuinfo; then
  infer translution --steps 30 --warmup 5 --precision bf16 --compare precision
fi
# Memory for time: backward projects the pair rows again (alone, for its peak; then alternating).
train translution --recompute
train translution --compare recompute
# The last block for the CLS query alone against every token's.
for m in translution lor attention; do
  infer "$m" --steps 30 --warmup 5 --compare last-block
  train "$m" --compare last-block
done
# In a batch, the CLS query through the key and value projections against every token projected.
for m in lor attention; do train "$m" --compare reassociation; done
# Two cores: each core trains on half the batch, against every product split over both.
if [ "$(nproc)" -eq 2 ]; then
  for m in translution lor attention; do train "$m" --compare split-batch; done
fi
# The engine's own split of one image's work over the cores, against one thread.
for m in translution lor attention; do infer "$m" --steps 30 --warmup 5 --compare matrix-threads; done
# Without the batch split: one BLAS thread per GEMM with the engine splitting every product, against
# OpenBLAS's own threads (needs OpenBLAS).
if ldd "$cli" | grep -q libopenblas; then
  for m in translution lor attention; do train "$m" --split-batch off --compare blas-threads; done
fi
