#!/usr/bin/env bash
# Builds and checks the engine on a machine with an NVIDIA GPU and a CUDA LibTorch, without Qt:
#   1. configures and builds the engine, CLI and core tests (-DTRANSLUTION_BUILD_GUI=OFF), then
#      provisions MNIST as scripts/setup.sh does (a machine without network needs the files in place);
#   2. runs the CUDA tests (every operator on the GPU against the per-pair reference, the ViT and a
#      training run on the GPU against the same on the CPU);
#   3. trains a small model on the GPU through the CLI and evaluates it, then again in TF32, then in bf16
#      under autocast with each step replayed as a CUDA graph;
#   4. measures the GPU's figures (`translution bench --device cuda`, gpu_benchmarks below, most wanted
#      first): ViT-A/12 training at batch 256 in bf16 with the step replayed as a CUDA graph (its kernels
#      per replay, its share of the tensor cores' bf16 rate) and in fp32, the studio's one-canvas
#      latency, each way of computing relative projections, Translution ViT-A/4, TF32 rows;
#   5. runs every other test (ctest: core tests and the CLI's end-to-end test).
# Usage: scripts/cuda_check.sh [OUT_DIR]     (logs and bench.jsonl go there; default build-cuda/check)
# Environment:
#   CMAKE_PREFIX_PATH         where LibTorch (and any library not installed) is, ':'-separated
#                             (default: python3's torch, torch.utils.cmake_prefix_path)
#   TRANSLUTION_GTEST_SOURCE  a GoogleTest source tree, where the libgtest-dev package is absent
#   TRANSLUTION_EXTRA_INCLUDE a folder holding CLI/CLI.hpp and nlohmann/json.hpp (CLI11 and nlohmann-json,
#                             header-only), where libcli11-dev and nlohmann-json3-dev are absent: e.g. copy
#                             /usr/include/CLI and /usr/include/nlohmann from a Debian machine into one folder
#   TRANSLUTION_DATA          MNIST (default data/mnist); provisioned as scripts/setup.sh does
#   TRANSLUTION_BUILD_DIR     build directory (default build-cuda)
#   CUDA_CHECK_STEPS          the steps to run (default "build cuda train bench ctest")
#   CUDA_CHECK_TESTS          the cuda step's GoogleTest filter (default: every test that uses the GPU)
#   CUDA_CHECK_SECONDS        stop starting steps, and cut the running one, after this long (default 3000)
# Every step's exit status is summarised at the end; the script exits non-zero if any failed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-${TRANSLUTION_BUILD_DIR:-$ROOT/build-cuda}/check}
BUILD=${TRANSLUTION_BUILD_DIR:-$ROOT/build-cuda}
DATA=${TRANSLUTION_DATA:-$ROOT/data/mnist}
STEPS=${CUDA_CHECK_STEPS:-build cuda train bench ctest}
TESTS=${CUDA_CHECK_TESTS:-Cuda*.*:Device.*:*OnCuda*}
DEADLINE=$((SECONDS + ${CUDA_CHECK_SECONDS:-3000}))
CLI=$BUILD/app/translution
export TRANSLUTION_DATA=$DATA
mkdir -p "$OUT"
summary=()
failed=0

wants() { [[ " $STEPS " == *" $1 "* ]]; }
left() { echo $((DEADLINE - SECONDS)); }
# Runs one step with its output in $OUT/NAME.log, cut at LIMIT seconds or the deadline.
step() {
  local name=$1 limit=$2
  shift 2
  local budget
  budget=$(left)
  ((limit < budget)) && budget=$limit
  if ((budget < 10)); then
    summary+=("$name: skipped (out of time)")
    failed=1
    return 1
  fi
  echo "==> $name (at most ${budget}s)"
  local t0=$SECONDS rc
  timeout --kill-after=10 "$budget" bash -c '"$@"' "$name" "$@" >"$OUT/$name.log" 2>&1
  rc=$?
  ((rc == 124 || rc == 137)) && summary+=("$name: cut after $((SECONDS - t0))s") ||
    summary+=("$name: exit $rc in $((SECONDS - t0))s")
  ((rc == 0)) || failed=1
  return $rc
}

describe_machine() {
  {
    date -u
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
    grep -m1 'model name' /proc/cpuinfo
    echo "cores: $(nproc); avx512f: $(grep -c -m1 ' avx512f ' /proc/cpuinfo); amx_bf16: $(grep -c -m1 ' amx_bf16 ' /proc/cpuinfo)"
    g++ --version | head -1
    cmake --version | head -1
    git -C "$ROOT" log -1 --format='commit %h %s' 2>/dev/null
  } >"$OUT/machine.txt"
  cat "$OUT/machine.txt"
}

configure_and_build() {
  local prefix=${CMAKE_PREFIX_PATH:-}
  prefix=${prefix//:/;}  # the environment's list separator is CMake's ';'
  if [ -z "$prefix" ]; then
    prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)') ||
      { echo "no CMAKE_PREFIX_PATH and python3 has no torch: point CMAKE_PREFIX_PATH at a CUDA LibTorch"; return 1; }
  fi
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRANSLUTION_BUILD_GUI=OFF \
    -DCMAKE_PREFIX_PATH="$prefix" -DTRANSLUTION_TEST_DATA="$DATA" \
    ${TRANSLUTION_GTEST_SOURCE:+-DTRANSLUTION_GTEST_SOURCE="$TRANSLUTION_GTEST_SOURCE"} \
    ${TRANSLUTION_EXTRA_INCLUDE:+-DTRANSLUTION_EXTRA_INCLUDE="$TRANSLUTION_EXTRA_INCLUDE"} || return 1
  cmake --build "$BUILD" -- -k 0 || return 1
  # A CUDA LibTorch must have switched the engine's CUDA code on.
  grep -q TRANSLUTION_WITH_CUDA "$BUILD/compile_commands.json" ||
    { echo "built without TRANSLUTION_WITH_CUDA: CMake found a CPU-only LibTorch at $prefix"; return 1; }
}

provision() {
  "$CLI" data fetch --data-dir "$DATA"
}

# The GPU's figures, most wanted first, so that a run cut by its deadline keeps them: ViT-A/12
# training at batch 256 (bf16 under autocast with the whole step replayed as a CUDA graph, then
# fp32), the studio's one-canvas latency, each way of computing relative projections, Translution
# ViT-A/4, then TF32 and the studio without graphs. A failed row is named and the next one runs.
gpu_benchmarks() {
  local common=(--preset A --image 84 --patch 12 --device cuda --json) failures=0
  row() { "$CLI" bench "$@" || { echo "FAILED: bench $*"; failures=$((failures + 1)); }; }
  local m a s
  for m in translution lor attention; do
    row --model "$m" "${common[@]}" --mode train --batch 256 --steps 10 --warmup 3 \
      --train-step graphed --precision bf16-autocast
  done
  for m in translution lor attention; do
    for s in device graphed; do
      row --model "$m" "${common[@]}" --mode train --batch 256 --steps 10 --warmup 3 --train-step $s
    done
  done
  # One canvas through the studio's path, replayed as a CUDA graph: the bundled models, then ViT-A/12.
  local bundled=resources/models/translution.ckpt,resources/models/lor.ckpt,resources/models/attention.ckpt
  row --mode studio --device cuda --cuda-graph on --checkpoints "$ROOT/${bundled//,/,$ROOT/}" --steps 60 --json
  for m in attention lor translution; do
    row --mode studio --device cuda --cuda-graph on --model "$m" --preset A --image 84 --patch 12 --steps 60 --json
  done
  # Each way of computing relative projections, forced: one image, and a bf16 graphed step at batch 256.
  for a in per-matrix all-tokens offset-batched; do
    for m in lor translution; do
      row --model "$m" "${common[@]}" --mode infer --batch 1 --steps 20 --warmup 3 --algorithm "$a"
      row --model "$m" "${common[@]}" --mode train --batch 256 --steps 10 --warmup 3 --algorithm "$a" \
        --train-step graphed --precision bf16-autocast
    done
  done
  # Translution ViT-A/4 (441 patches and the CLS token) at batch 64, pair rows recomputed in backward.
  row --model translution --preset A --image 84 --patch 4 --device cuda --json --mode train --batch 64 \
    --steps 5 --warmup 2 --recompute --train-step graphed --precision bf16-autocast
  # TF32 on the tensor cores, and the studio's canvas launched op by op.
  for m in translution lor attention; do
    row --model "$m" "${common[@]}" --mode train --batch 256 --steps 10 --warmup 3 --precision tf32
  done
  row --mode studio --device cuda --cuda-graph off --checkpoints "$ROOT/${bundled//,/,$ROOT/}" --steps 60 --json
  ((failures == 0))
}

# A whole run on the GPU: train, write the checkpoint, evaluate it there and on the CPU.
gpu_training() {
  local ckpt=$BUILD/gpu-train.ckpt
  "$CLI" train --device cuda --model translution --preset tiny --image 28 --patch 7 --depth 2 --dataset mnist \
    --batch 64 --steps 300 --eval-every 100 --eval-samples 1000 --out "$ckpt" &&
    "$CLI" eval --checkpoint "$ckpt" --device cuda --samples 10000 &&
    "$CLI" eval --checkpoint "$ckpt" --device cpu --samples 2000 &&
    # The same run in TF32: its accuracy against the fp32 run's above.
    "$CLI" train --device cuda --precision tf32 --model translution --preset tiny --image 28 --patch 7 --depth 2 \
      --dataset mnist --batch 64 --steps 300 --eval-every 100 --eval-samples 1000 --out "$BUILD/gpu-train-tf32.ckpt" &&
    # bf16 under autocast, each step replayed as a CUDA graph: its accuracy against the fp32 run's.
    "$CLI" train --device cuda --precision bf16-autocast --cuda-graph on --algorithm offset-batched \
      --model translution --preset tiny --image 28 --patch 7 --depth 2 --dataset mnist --batch 64 --steps 300 \
      --eval-every 100 --eval-samples 1000 --out "$BUILD/gpu-train-bf16.ckpt"
}

# The steps run in child shells (under timeout): they see these.
export ROOT OUT BUILD DATA CLI
export -f configure_and_build provision gpu_benchmarks gpu_training

describe_machine
if wants build; then
  step build 1200 configure_and_build || { echo "build failed: $OUT/build.log"; tail -40 "$OUT/build.log"; }
fi
if [ -x "$CLI" ]; then
  step data 300 provision
  if wants cuda; then
    step cuda 300 "$BUILD/tests/core/core_tests" --gtest_filter="$TESTS" --gtest_color=no
    # Without a visible GPU every CUDA test skips, and gtest exits 0.
    if grep -q '^\[  SKIPPED \]' "$OUT/cuda.log"; then
      summary+=("cuda: tests skipped: no GPU visible to LibTorch")
      failed=1
    fi
  fi
  wants train && step train 240 gpu_training
  if wants bench; then
    step bench 900 gpu_benchmarks
    grep '^{' "$OUT/bench.log" >"$OUT/bench.jsonl"
  fi
  wants ctest && step ctest 1800 ctest --test-dir "$BUILD" -j"$(nproc)" --output-on-failure --timeout 900
else
  summary+=("no CLI at $CLI: nothing to test (build it: CUDA_CHECK_STEPS must include build)")
  failed=1
fi
echo "==> summary"
printf '  %s\n' "${summary[@]}"
[ -f "$OUT/cuda.log" ] && grep -E '^\[  (PASSED|FAILED) +\]|^\[  SKIPPED \] [0-9]+ tests?,' "$OUT/cuda.log" | sed 's/^/  cuda: /'
[ -f "$OUT/ctest.log" ] && grep -E 'tests passed|tests failed|\(Failed\)|\(Timeout\)|\*\*\*' "$OUT/ctest.log" | sed 's/^/  ctest: /'
exit $failed
