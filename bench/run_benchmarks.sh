#!/usr/bin/env bash
# Measures what docs/benchmarks.md reports: one JSON line per measurement.
# Usage: bench/run_benchmarks.sh [build-dir] > results.jsonl   (about 10 minutes on 2 cores)
# OpenBLAS picks its kernels for the CPU unless $OPENBLAS_CORETYPE names some; the table in
# docs/benchmarks.md is measured with it unset (`env -u OPENBLAS_CORETYPE bench/run_benchmarks.sh`),
# as on a fresh Debian machine, and its last rows force the AVX2 (Haswell) kernels for comparison.
set -euo pipefail
cli=${1:-build}/app/translution
if [ -n "${OPENBLAS_CORETYPE+set}" ]; then
  echo "note: OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE is set: OpenBLAS runs those kernels, not its own choice" >&2
fi
common=(--preset A --image 84 --patch 12)
for m in attention lor translution; do
  "$cli" bench --model "$m" "${common[@]}" --mode infer --batch 1 --steps 20 --json
done
for m in attention lor; do
  "$cli" bench --model "$m" "${common[@]}" --mode train --batch 32 --steps 4 --warmup 1 --json
done
"$cli" bench --model translution "${common[@]}" --mode train --batch 32 --steps 3 --warmup 1 --json
# Mixed precision (nn/bf16_gemm.h): training with bfloat16 products, where the CPU multiplies bfloat16
# (AMX tiles or AVX512-BF16): alone (its peak memory), then alternating with fp32 in one process.
bf16_cpu() { grep -q -E ' (amx_bf16|avx512_bf16) ' /proc/cpuinfo; }
if bf16_cpu; then
  for m in attention lor; do
    "$cli" bench --model "$m" "${common[@]}" --mode train --batch 32 --steps 4 --warmup 1 --precision bf16 --json
    "$cli" bench --model "$m" "${common[@]}" --mode train --batch 32 --steps 10 --warmup 1 --precision bf16 --compare precision --json
  done
  "$cli" bench --model translution "${common[@]}" --mode train --batch 32 --steps 3 --warmup 1 --precision bf16 --json
  "$cli" bench --model translution "${common[@]}" --mode train --batch 32 --steps 4 --warmup 1 --precision bf16 --compare precision --json
fi
# Inference reading Translution's offset matrices as bfloat16 copies (nn/bf16_weights.h, AVX-512):
# alone (its peak memory holds the copies), then alternating with fp32 in one process.
if grep -q ' avx512f ' /proc/cpuinfo; then
  "$cli" bench --model translution "${common[@]}" --mode infer --batch 1 --steps 20 --precision bf16 --json
  "$cli" bench --model translution "${common[@]}" --mode infer --batch 1 --steps 30 --warmup 5 --precision bf16 --compare precision --json
fi
# Algorithm choice: both ways of computing relative projections, forced.
for a in per-matrix all-tokens; do
  for m in lor translution; do
    "$cli" bench --model "$m" "${common[@]}" --mode infer --batch 1 --steps 10 --algorithm "$a" --json
  done
  "$cli" bench --model lor "${common[@]}" --mode train --batch 32 --steps 3 --warmup 1 --algorithm "$a" --json
done
# Intra-op threads (OpenBLAS threads its GEMMs either way).
for t in 1 2; do
  for m in attention translution; do
    TRANSLUTION_THREADS=$t "$cli" bench --model "$m" "${common[@]}" --mode infer --batch 1 --steps 10 --json
  done
done
# The engine's kernels against LibTorch's plain ops (--kernels reference), steps alternating in one
# process: one image, a batch of 32 and a training step of each model (the optimizer is each run's own).
for m in attention lor translution; do
  "$cli" bench --model "$m" "${common[@]}" --mode infer --batch 1 --steps 30 --warmup 5 --compare kernels --json
done
for m in attention lor; do
  "$cli" bench --model "$m" "${common[@]}" --mode infer --batch 32 --steps 10 --compare kernels --json
  "$cli" bench --model "$m" "${common[@]}" --mode train --batch 32 --steps 10 --warmup 1 --compare kernels --json
done
"$cli" bench --model translution "${common[@]}" --mode train --batch 32 --steps 4 --warmup 1 --compare kernels --json
# Memory for time: backward recomputes the pair rows (alone, for its peak; then alternating, for its time).
"$cli" bench --model translution "${common[@]}" --mode train --batch 32 --steps 3 --warmup 1 --recompute --json
"$cli" bench --model translution "${common[@]}" --mode train --batch 32 --steps 6 --warmup 1 --compare recompute --json
# The engine's own split over the cores (helper threads) against none, steps alternating in one process:
# one image (bench runs batch 1 with one BLAS thread per GEMM), and training without the batch split
# (per-pair kernels, AdamW, LoR's small products).
for m in attention lor; do
  "$cli" bench --model "$m" "${common[@]}" --mode infer --batch 1 --steps 200 --warmup 20 --compare matrix-threads --json
done
"$cli" bench --model translution "${common[@]}" --mode infer --batch 1 --steps 20 --compare matrix-threads --json
"$cli" bench --model translution "${common[@]}" --mode train --batch 32 --steps 4 --warmup 1 --split-batch off --compare matrix-threads --json
"$cli" bench --model lor "${common[@]}" --mode train --batch 32 --steps 10 --warmup 1 --split-batch off --compare matrix-threads --json
# The last block for the CLS query alone (the default: only its output reaches the head) against
# every token's, steps alternating in one process: one image and a training step of each model.
for m in attention lor translution; do
  "$cli" bench --model "$m" "${common[@]}" --mode infer --batch 1 --steps 30 --warmup 5 --compare last-block --json
done
for m in attention lor; do
  "$cli" bench --model "$m" "${common[@]}" --mode train --batch 32 --steps 10 --warmup 1 --compare last-block --json
done
"$cli" bench --model translution "${common[@]}" --mode train --batch 32 --steps 4 --warmup 1 --compare last-block --json
# The batch split over two cores (train/batch_split.h, the default there: each core the forward and
# backward of half the batch) against splitting every product (--split-batch off), steps alternating
# in one process, fp32 and, where the CPU multiplies bfloat16, bf16.
if [ "$(nproc)" -eq 2 ]; then
  precisions=(fp32)
  if bf16_cpu; then precisions+=(bf16); fi
  for p in "${precisions[@]}"; do
    for m in attention lor; do
      "$cli" bench --model "$m" "${common[@]}" --mode train --batch 32 --steps 10 --warmup 1 --precision "$p" --compare split-batch --json
    done
    "$cli" bench --model translution "${common[@]}" --mode train --batch 32 --steps 4 --warmup 1 --precision "$p" --compare split-batch --json
  done
fi
# Who splits the products in training when the batch is not split (train/training_threads.h): one
# BLAS thread per GEMM with the engine splitting every product (then the default for Translution and
# LoR) against OpenBLAS's own threads (then the default for self-attention), steps alternating in one
# process.
for m in lor attention; do
  "$cli" bench --model "$m" "${common[@]}" --mode train --batch 32 --steps 10 --warmup 1 --split-batch off --compare blas-threads --json
done
"$cli" bench --model translution "${common[@]}" --mode train --batch 32 --steps 6 --warmup 1 --split-batch off --compare blas-threads --json
# One image with two BLAS threads per GEMM (bench's setting before session 5): no split applies.
OPENBLAS_NUM_THREADS=2 "$cli" bench --model translution "${common[@]}" --mode infer --batch 1 --steps 20 --json
# The studio's path: both bundled models per canvas change.
"$cli" bench --mode studio --steps 60 --json
"$cli" bench --mode studio --steps 60 --kernels reference --json
# OpenBLAS's AVX2 (Haswell) kernels, which the development machine's shell selects: one image and a
# training step of each model, for comparison with the rows above (docs/benchmarks.md, "Session 10").
for m in attention lor translution; do
  OPENBLAS_CORETYPE=Haswell "$cli" bench --model "$m" "${common[@]}" --mode infer --batch 1 --steps 20 --json
done
for m in attention lor; do
  OPENBLAS_CORETYPE=Haswell "$cli" bench --model "$m" "${common[@]}" --mode train --batch 32 --steps 4 --warmup 1 --json
done
OPENBLAS_CORETYPE=Haswell "$cli" bench --model translution "${common[@]}" --mode train --batch 32 --steps 3 --warmup 1 --json
