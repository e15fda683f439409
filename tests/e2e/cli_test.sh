#!/usr/bin/env bash
# End-to-end checks of the `translution` executable, as a user would run it.
set -u
cli=$1
ROOT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"

info=$("$cli" data info)
check "data info exits 0" test $? -eq 0
check "data info reports checksums passing" grep -q "all four files present, checksums pass" <<<"$info"
check "data info lists the four files" test "$(grep -c ' ok$' <<<"$info")" -eq 4
check "data info --json" bash -c "\"$cli\" data info --json | grep -q '\"ok\":true'"

check "render dynamic test 7" "$cli" data render --dataset dynamic --split test --index 7 --out "$work/a.png"
check "render again" "$cli" data render --dataset dynamic --split test --index 7 --out "$work/b.png"
check "same bytes twice" cmp -s "$work/a.png" "$work/b.png"
check "84x84 PNG" bash -c "file '$work/a.png' | grep -q 'PNG image data, 84 x 84'"
check "grid contact sheet" "$cli" data render --dataset moving --split train --index 0 --grid 4x8 --out "$work/g.png"
check "grid size" bash -c "file '$work/g.png' | grep -q 'PNG image data, 526 x 262'"

# A corrupt IDX file: one-line error naming the file, non-zero exit, nothing written.
mkdir -p "$work/bad"
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-labels-idx1-ubyte; do
  cp "$TRANSLUTION_DATA/$f" "$work/bad/$f"
done
head -c 100000 "$TRANSLUTION_DATA/t10k-images-idx3-ubyte" >"$work/bad/t10k-images-idx3-ubyte"
err=$("$cli" data render --data-dir "$work/bad" --dataset static --split test --index 0 --out "$work/c.png" 2>&1)
status=$?
check "corrupt file exits non-zero" test $status -ne 0
check "error names the file" grep -q "$work/bad/t10k-images-idx3-ubyte" <<<"$err"
check "error is one line" test "$(wc -l <<<"$err")" -eq 1
check "no output written" test ! -e "$work/c.png"
echo "$err"
check "info fails on corrupt dir" bash -c "! \"$cli\" data info --data-dir '$work/bad' >/dev/null"
check "unknown option is an error" bash -c "! \"$cli\" data render --datset static 2>/dev/null"

# Models: the list names every operator; info prints the paper's parameter counts.
check "model list has translution-qk" bash -c "\"$cli\" model list | grep -q '^  translution-qk '"
check "model info translution/12: 116.2 M" bash -c "\"$cli\" model info --model translution --preset A --image 84 --patch 12 | grep -q '(116.2 M)'"
check "model info lor/7: 8.3 M" bash -c "\"$cli\" model info --model lor --preset A --image 84 --patch 7 | grep -q '(8.3 M)'"
# LoR's two low-rank widths and its shared terms, set apart; and refused when malformed.
check "model info names LoR's widths" bash -c "\"$cli\" model info --model lor --preset tiny --lor-dims 4,12 --no-lor-shared | grep -q 'low rank     C1 4 in, C2 12 out, without shared terms'"
check "LoR's widths change its size" bash -c "test \"\$(\"$cli\" model info --model lor --preset tiny --lor-dims 4,12 --json)\" != \"\$(\"$cli\" model info --model lor --preset tiny --lor-dims 12,4 --json)\""
err=$("$cli" model info --model lor --lor-dims 4 2>&1)
check "--lor-dims needs two widths" bash -c "test $? -ne 0 && test \$(wc -l <<<\"$err\") -eq 1 && grep -q \"expects two widths like 8,16\" <<<\"$err\""
# Hybrids: the first blocks of another operator (Translution first, RoPE attention after).
check "model info names a hybrid's first blocks" bash -c "\"$cli\" model info --model rope --preset tiny --first-model translution --first-blocks 2 | grep -q 'hybrid       first 2 blocks: translution'"
check "a hybrid deeper than the model is one line" bash -c "out=\$(\"$cli\" model info --model rope --preset tiny --first-model translution --first-blocks 9 2>&1); test \$? -ne 0 && test \$(wc -l <<<\"\$out\") -eq 1 && grep -q 'first_blocks must be between 0 and depth' <<<\"\$out\""
check "--lor-dim and --lor-dims together are refused" bash -c "! \"$cli\" model info --model lor --lor-dim 8 --lor-dims 4,4 2>/dev/null"
check "model info --json" bash -c "\"$cli\" model info --model attention --image 84 --patch 12 --json | grep -q '\"parameters\":2706346'"
err=$("$cli" model info --model attention --patch 13 2>&1)
check "bad patch exits non-zero" test $? -ne 0
check "bad patch says why" grep -q "patch size 13 does not divide the 84x84 image" <<<"$err"
# Width options override the preset's: 4 blocks of 3 x 172 banks of 64 x 32, plus the rest.
check "model info --head-dim 32 --depth 4" bash -c "\"$cli\" model info --model translution --preset tiny --depth 4 --head-dim 32 --image 84 --patch 12 --json | grep -q '\"parameters\":4313386'"
err=$("$cli" model info --model attention --heads 0 2>&1)
check "zero heads is an error" test $? -ne 0
check "zero heads says why" grep -q "heads" <<<"$err"

# A tiny training-step benchmark: one JSON object with the figures the docs use.
bench=$("$cli" bench --model translution --preset tiny --image 28 --patch 7 --depth 1 --mode train --batch 2 --steps 1 --warmup 0 --json)
check "bench exits 0" test $? -eq 0
for key in ms_per_step images_per_second peak_memory_bytes exact_flops_per_image fraction_of_floor fma_peak_gflops fraction_of_fma_peak optimizer_ms; do
  check "bench reports $key" grep -q "\"$key\":" <<<"$bench"
done
check "bench times the training phases" grep -q '"forward_ms":[0-9].*"optimizer_ms":[0-9]' <<<"$bench"
check "bench sets the memory estimate beside the measured peak" \
  grep -qE '"peak_memory_bytes":[1-9][0-9]*,"estimated_peak_bytes":[1-9][0-9]*,' <<<"$bench"
check "bench names no bf16 kernel for an fp32 step" grep -q '"bf16_kernel":""' <<<"$bench"
check "bench names the library of its GEMM reference" grep -qE '"gemm_library":"(aten|onednn)"' <<<"$bench"
# The last block for the CLS query alone by default; --last-block all runs and counts every token's.
check "bench runs the last block for the CLS query alone by default" grep -q '"last_block":"cls"' <<<"$bench"
flops() { grep -o '"exact_flops_per_image":[0-9]*' | cut -d: -f2; }
every=$("$cli" bench --model translution --preset tiny --image 28 --patch 7 --depth 1 --mode train --batch 2 --steps 1 --warmup 0 --last-block all --json)
check "bench --last-block all is reported" grep -q '"last_block":"all"' <<<"$every"
check "bench --last-block all counts more work than the CLS query's alone" test "$(flops <<<"$every")" -gt "$(flops <<<"$bench")"
# Self-attention's CLS query in a batch meets the unprojected inputs: less work counted than with it off
# (batch 4: two images a share where the batch is split over two cores).
sa=(bench --model attention --preset tiny --image 28 --patch 7 --depth 1 --mode train --batch 4 --steps 1 --warmup 0 --json)
sa_on=$("$cli" "${sa[@]}")
sa_off=$("$cli" "${sa[@]}" --reassociation off)
check "bench reports self-attention's reassociation on by default" grep -q '"reassociation":"on"' <<<"$sa_on"
check "bench --reassociation off is reported" grep -q '"reassociation":"off"' <<<"$sa_off"
check "bench counts less work with the reassociation" test "$(flops <<<"$sa_off")" -gt "$(flops <<<"$sa_on")"
# A batch of two split over two cores is two shares of one image: the plain products, counted as such.
sa_two=$("$cli" bench --model attention --preset tiny --image 28 --patch 7 --depth 1 --mode train --batch 2 --steps 1 --warmup 0 --split-batch on --json 2>/dev/null || true)
if grep -q '"split_batch":"on"' <<<"$sa_two"; then
  check "bench counts one-image shares' plain work" test "$(flops <<<"$sa_two")" -eq "$(flops <<<"$sa_off")"
fi
# The batch split over the cores (train/batch_split.h): on by default where two cores and OpenBLAS allow it.
# It needs two free cores and OpenBLAS (bench names its kernels), and no thread settings from outside.
split_here=no
if [ "$(nproc)" -eq 2 ] && [ -z "${OPENBLAS_NUM_THREADS:-}" ] && [ "${TRANSLUTION_THREADS:-1}" = 1 ] &&
   grep -q '"blas_core":"[A-Za-z]' <<<"$bench"; then
  split_here=yes
fi
if [ "$split_here" = yes ]; then
  check "bench splits a training batch over two cores by default" grep -q '"split_batch":"on"' <<<"$bench"
  both=$("$cli" bench --model attention --preset tiny --image 28 --patch 7 --depth 1 --mode train --batch 4 --steps 1 --warmup 0 --compare split-batch --json)
  check "bench --compare split-batch times both" grep -qE '"compare":"split-batch","ms_per_step_alternative":[0-9]' <<<"$both"
  # oneDNN's sgemm takes a split step's larger float products where LibTorch links it (Debian's does).
  if ldd "$cli" | grep -q libdnnl; then
    check "bench runs a split step's products on oneDNN by default" grep -q '"sgemm":"onednn"' <<<"$bench"
  fi
  check "bench refuses a product-split comparison on a split batch" bash -c "out=\$(\"$cli\" bench --model attention --preset tiny --image 28 --patch 7 --depth 1 --mode train --batch 4 --steps 1 --warmup 0 --compare blas-threads 2>&1); test \$? -ne 0 && grep -q 'add --split-batch off' <<<\"\$out\""
fi
off=$("$cli" bench --model lor --preset tiny --image 28 --patch 7 --depth 1 --mode train --batch 2 --steps 1 --warmup 0 --split-batch off --json)
check "bench --split-batch off is reported" grep -q '"split_batch":"off"' <<<"$off"
check "bench --split-batch needs training" bash -c "out=\$(\"$cli\" bench --model lor --preset tiny --image 28 --patch 7 --split-batch on 2>&1); test \$? -ne 0 && grep -q 'split-batch applies to --mode train' <<<\"\$out\""
check "bench --split-batch rejects an unknown value" bash -c "out=\$(\"$cli\" bench --model lor --preset tiny --image 28 --patch 7 --mode train --split-batch sometimes 2>&1); test \$? -ne 0 && grep -q \"unknown batch split 'sometimes'\" <<<\"\$out\""
# CPU steal (util/cpu_steal.h): a share where Linux counts it, -1 where /proc/stat is missing
# (or, as in this one tiny step, when less than a clock tick of CPU time passed).
if [ -r /proc/stat ]; then
  check "bench reports the CPU steal during its steps" grep -qE '"cpu_steal":(-1\.0|[01]\.[0-9]{1,4})[,}]' <<<"$bench"
else
  check "bench reports an unknown CPU steal without /proc/stat" grep -q '"cpu_steal":-1' <<<"$bench"
fi
# --kernels reference: LibTorch's plain ops wherever the engine has its own path, each reported.
reference='"gemm":"aten","row_gemm":"off","pair_kernels":"aten","inference_kernels":"aten","training_kernels":"aten","projections":"separate","precision":"fp32","matrix_threads":3'
bench=$("$cli" bench --model translution --preset tiny --image 28 --patch 7 --depth 1 --mode train --batch 2 --steps 1 --warmup 0 --kernels reference --matrix-threads 3 --json)
check "bench --kernels reference trains, its paths reported" grep -q "$reference" <<<"$bench"
check "bench --kernels reference trains with LibTorch's AdamW" grep -q '"optimizer":"adamw"' <<<"$bench"
bench=$("$cli" bench --model translution --preset tiny --image 28 --patch 7 --depth 1 --mode infer --batch 1 --steps 1 --warmup 0 --kernels reference --matrix-threads 3 --json)
check "bench --kernels reference infers, its paths reported" grep -q "$reference" <<<"$bench"
bench=$("$cli" bench --model attention --preset tiny --image 28 --patch 7 --depth 1 --mode infer --batch 1 --steps 2 --warmup 0 --compare kernels --json)
check "bench --compare kernels alternates in one process (the engine's by default)" grep -qE '"inference_kernels":"fused",.*"compare":"kernels","ms_per_step_alternative":[0-9]' <<<"$bench"
bench=$("$cli" bench --model lor --preset tiny --image 28 --patch 7 --depth 1 --mode train --batch 2 --steps 2 --warmup 0 --compare kernels --json)
check "bench --compare kernels alternates training steps" grep -qE '"training_kernels":"fused",.*"compare":"kernels","ms_per_step_alternative":[0-9]' <<<"$bench"
"$cli" bench --model attention --kernels fast >/dev/null 2>"$work/kernels.err"
check "bench rejects a bad --kernels with exit status 1" test $? -eq 1
check "in one line naming the option and the value" bash -c "test \$(wc -l <'$work/kernels.err') -eq 1 && grep -q \"^error: unknown --kernels 'fast' (expected engine or reference)\" '$work/kernels.err'"
# In inference bf16 reads Translution's offset matrices as bfloat16 (cpu/bf16_weights.h, AVX-512).
check "bench --precision bf16 in inference names a model without offset matrices" bash -c "out=\$(\"$cli\" bench --model attention --precision bf16 2>&1); test \$? -ne 0 && grep -qE 'attention has none|lacks' <<<\"\$out\""
check "bench in bf16 inference refuses fp32-only path switches" bash -c "out=\$(\"$cli\" bench --model translution --preset tiny --image 28 --patch 7 --depth 1 --precision bf16 --kernels reference 2>&1); test \$? -ne 0 && grep -qE 'choose among fp32|lacks' <<<\"\$out\""
check "bench --mode studio rejects --precision" bash -c "out=\$(\"$cli\" bench --mode studio --precision bf16 2>&1); test \$? -ne 0 && grep -q 'precision applies to --mode infer and --mode train' <<<\"\$out\""
if grep -q ' avx512f ' /proc/cpuinfo; then
  bench=$("$cli" bench --model translution --preset tiny --image 28 --patch 7 --depth 1 --mode infer --batch 1 --steps 2 --warmup 0 --precision bf16 --compare precision --json)
  check "bench --precision bf16 reads bfloat16 offset matrices in inference" grep -qE '"mode":"infer".*"precision":"bf16",.*"compare":"precision","ms_per_step_alternative":[0-9]' <<<"$bench"
fi
check "bench rejects an unknown --precision" bash -c "out=\$(\"$cli\" bench --model attention --mode train --precision fp16 2>&1); test \$? -ne 0 && grep -q \"unknown --precision 'fp16'\" <<<\"\$out\""
# Training checks here are the CPU engine's (bf16 on AMX tiles or AVX512-BF16, bit-equal losses), on GPU machines too.
tiny_train=(--model attention --preset tiny --image 28 --patch 7 --depth 1 --dataset dynamic --batch 16 --train-samples 64 --steps 3 --eval-samples 32 --no-final-eval --device cpu)
# Whether this machine runs bf16 (AMX tiles a kernel grants, or AVX512-BF16) is the CLI's to say.
if bench=$("$cli" bench --model attention --preset tiny --image 28 --patch 7 --depth 1 --mode train --batch 2 --steps 2 --warmup 0 --precision bf16 --compare precision --json 2>"$work/bf16.err"); then
  check "bench --compare precision alternates bf16 and fp32" grep -qE '"precision":"bf16",.*"compare":"precision","ms_per_step_alternative":[0-9]' <<<"$bench"
  check "bench names the bf16 kernel that ran" grep -qE '"bf16_kernel":"(amx|avx512-bf16)"' <<<"$bench"
  check "train --precision bf16 trains" "$cli" train "${tiny_train[@]}" --precision bf16 --out "$work/bf16.ckpt"
  check "the checkpoint keeps the precision" bash -c "\"$cli\" checkpoint info '$work/bf16.ckpt' | grep -q 'precision=bf16'"
else
  check "bench --precision bf16 says why it cannot run here" grep -q 'precision bf16 needs bfloat16 products' "$work/bf16.err"
  check "train --precision bf16 says why it cannot run here" bash -c "out=\$(\"$cli\" train ${tiny_train[*]} --precision bf16 --out '$work/bf16.ckpt' 2>&1); test \$? -ne 0 && grep -q 'AMX' <<<\"\$out\" && test ! -e '$work/bf16.ckpt'"
fi
# bf16 under LibTorch's autocast runs wherever LibTorch does: the device step, stored in the checkpoint.
check "train --precision bf16-autocast trains" "$cli" train "${tiny_train[@]}" --precision bf16-autocast --algorithm offset-batched --out "$work/autocast.ckpt"
check "the checkpoint keeps bf16-autocast" bash -c "\"$cli\" checkpoint info '$work/autocast.ckpt' | grep -q 'precision=bf16-autocast'"
bench=$("$cli" bench --model translution --preset tiny --image 28 --patch 7 --depth 1 --mode train --batch 2 --steps 1 --warmup 0 --precision bf16-autocast --json)
for field in '"kernels":"reference"' '"train_step":"device"' '"precision":"bf16-autocast"'; do
  check "bench --precision bf16-autocast times the device step on LibTorch's ops: $field" grep -qF "$field" <<<"$bench"
done
check "train --cuda-graph on without a GPU is one line naming the device" bash -c "out=\$(\"$cli\" train ${tiny_train[*]} --cuda-graph on --out '$work/graph.ckpt' 2>&1); test \$? -ne 0 && test \$(wc -l <<<\"\$out\") -eq 1 && grep -q 'device is cpu' <<<\"\$out\" && test ! -e '$work/graph.ckpt'"
check "bench --train-step graphed without a GPU says what it needs" bash -c "out=\$(\"$cli\" bench --model lor --preset tiny --mode train --train-step graphed 2>&1); test \$? -ne 0 && grep -q 'needs --device cuda' <<<\"\$out\""
bench=$("$cli" bench --model translution --preset tiny --image 28 --patch 7 --depth 1 --mode infer --batch 1 --steps 1 --warmup 0 --json)
if grep -qw avx512f /proc/cpuinfo; then
  check "bench runs one image's products on the row kernel by default (AVX-512 here)" grep -q '"gemm":"raw","row_gemm":"on"' <<<"$bench"
fi
check "bench rejects zero matrix threads" bash -c "out=\$(\"$cli\" bench --model attention --matrix-threads 0 2>&1); test \$? -ne 0 && grep -q 'matrix-threads must be auto or from 1 to' <<<\"\$out\""
bench=$(env -u TRANSLUTION_KEEP_FREED_MEMORY "$cli" bench --model attention --preset tiny --image 28 --patch 7 --depth 1 --mode infer --batch 1 --steps 2 --warmup 0 --compare matrix-threads --json)
check "bench --compare matrix-threads runs one image with one BLAS thread per GEMM" grep -qE '"blas_threads":(0|1),"blas_core":"[^"]*","freed_memory":"pool","compare":"matrix-threads","ms_per_step_alternative":[0-9]' <<<"$bench"
# Training Translution without the batch split: one BLAS thread per GEMM, the engine splitting the
# products (where OpenBLAS has threads to give up); the alternative gives them back.
bench=$(env -u OPENBLAS_NUM_THREADS "$cli" bench --model translution --preset tiny --image 28 --patch 7 --depth 1 --mode train --batch 2 --steps 1 --warmup 0 --split-batch off --compare blas-threads --device cpu --json 2>"$work/blas.err")
if grep -q 'which this LibTorch does not use' "$work/blas.err"; then  # e.g. PyTorch's own LibTorch, with MKL
  check "bench --compare blas-threads says it needs OpenBLAS" test -z "$bench"
else
  check "bench --compare blas-threads alternates in one process" grep -qE '"compare":"blas-threads","ms_per_step_alternative":[0-9]' <<<"$bench"
fi
if [ "$(nproc)" -ge 2 ] && grep -q '"blas_threads":[1-9]' <<<"$bench"; then
  check "bench trains Translution with one BLAS thread per GEMM" grep -q '"blas_threads":1,' <<<"$bench"
fi
# OpenBLAS's kernels (cpu/blas_kernels.h): reported, and on an AVX-512 CPU a
# hint when OPENBLAS_CORETYPE keeps them on AVX2.
tiny_infer=(bench --model attention --preset tiny --image 28 --patch 7 --depth 1 --mode infer --batch 1 --steps 1 --warmup 0)
bench=$(OPENBLAS_CORETYPE=Haswell "$cli" "${tiny_infer[@]}" --json)
# (OpenBLAS honours OPENBLAS_CORETYPE only in its x86 builds for many CPUs.)
expect_kernel_note=no  # whether bench and train must print the note (below)
if ! grep -q '"blas_core":""' <<<"$bench" && [ "$(uname -m)" = x86_64 ] && grep -q ' avx2 ' /proc/cpuinfo; then
  check "bench reports the OpenBLAS kernels OPENBLAS_CORETYPE chose" grep -q '"blas_core":"Haswell"' <<<"$bench"
  if grep -q ' avx512f ' /proc/cpuinfo && grep -q ' avx512bw ' /proc/cpuinfo && grep -q ' avx512dq ' /proc/cpuinfo &&
     grep -q ' avx512vl ' /proc/cpuinfo; then
    expect_kernel_note=yes
    check "bench says how to leave OpenBLAS's AVX2 kernels on an AVX-512 CPU" bash -c \
      "OPENBLAS_CORETYPE=Haswell \"$cli\" ${tiny_infer[*]} | grep -q 'note: with OPENBLAS_CORETYPE=Haswell, OpenBLAS runs its AVX2'"
  fi
fi
check "train rejects zero matrix threads" bash -c "out=\$(\"$cli\" train --model attention --out '$work/x.ckpt' --matrix-threads 0 2>&1); test \$? -ne 0 && grep -q 'matrix-threads must be auto or from 1 to' <<<\"\$out\""
models="$ROOT_DIR/resources/models"
studio=$("$cli" bench --mode studio --steps 2 --checkpoints "$models/translution.ckpt,$models/attention.ckpt" --json)
check "bench --mode studio times a canvas change" grep -qE '"median_ms":[0-9]' <<<"$studio"
check "bench --mode studio splits nothing by default, as the studio" grep -q '"matrix_threads":1' <<<"$studio"
check "bench --mode studio reports the CPU steal (or -1: unknown, too short)" grep -qE '"cpu_steal":(-1(\.0)?|[01](\.[0-9]+)?(e-?[0-9]+)?)[,}]' <<<"$studio"
check "bench rejects a bad --compare" bash -c "out=\$(\"$cli\" bench --model attention --compare fast 2>&1); test \$? -ne 0 && grep -q \"unknown --compare 'fast'\" <<<\"\$out\""
check "bench rejects a bad mode" bash -c "! \"$cli\" bench --model attention --mode sing 2>/dev/null"

# Training, checkpoints, evaluation, the sweep and prediction, on a tiny 28x28 model.
tiny=(--model lor --preset tiny --image 28 --patch 7 --depth 1 --dataset dynamic --batch 16 --train-samples 64 --device cpu)
out=$("$cli" train "${tiny[@]}" --steps 6 --eval-every 3 --eval-samples 32 --out "$work/m.ckpt" --json --no-final-eval)
check "train exits 0" test $? -eq 0
check "train --json reports evaluations" test "$(grep -c '"event":"evaluated"' <<<"$out")" -eq 2
check "train --json reports finished" grep -q '"event":"finished","step":6' <<<"$out"
check "checkpoint written" test -s "$work/m.ckpt"
check "train builds a hybrid" bash -c "\"$cli\" train --model rope --first-model translution --first-blocks 1 --preset tiny --image 28 --patch 7 --depth 2 --dataset dynamic --batch 16 --train-samples 64 --device cpu --steps 2 --out '$work/hybrid.ckpt' --no-final-eval >/dev/null 2>&1 && \"$cli\" checkpoint info '$work/hybrid.ckpt' | grep -q 'first_model=translution'"
# Layouts: the patches as one sequence (1-D offsets), causal or not.
check "model info shows a causal sequence's offsets" bash -c "\"$cli\" model info --model translution --preset tiny --image 28 --patch 7 --layout causal-sequence | grep -q 'layout       causal 1-D: patch i sees patches j <= i, offsets 0..15 (16); CLS reads all' &&
  \"$cli\" model info --model translution --preset tiny --image 28 --patch 7 --layout causal-sequence | grep -q 'relative     19 matrices'"
check "model info shows a sequence's offsets" bash -c "\"$cli\" model info --model lor --preset tiny --image 28 --patch 7 --layout sequence | grep -q 'offsets -15..15 (31)'"
check "train a causal-sequence Translution" bash -c "\"$cli\" train --model translution --layout causal-sequence --preset tiny --image 28 --patch 7 --depth 1 --dataset dynamic --batch 16 --train-samples 64 --device cpu --steps 2 --out '$work/causal.ckpt' --no-final-eval >/dev/null 2>&1 && \"$cli\" checkpoint info '$work/causal.ckpt' | grep -q 'layout=causal-sequence'"
err=$("$cli" model info --model translution --layout spiral 2>&1)
check "an unknown layout is one line" bash -c "test $? -ne 0 && test \$(wc -l <<<\"$err\") -eq 1 && grep -q 'layout' <<<\"$err\""
check "train accepts LoR's widths" bash -c "\"$cli\" train ${tiny[*]} --lor-dims 4,12 --no-lor-shared --steps 2 --out '$work/lor-dims.ckpt' --no-final-eval >/dev/null 2>&1 && \"$cli\" checkpoint info '$work/lor-dims.ckpt' | grep -q 'lor_c2=12'"
if [ "$expect_kernel_note" = yes ]; then
  check "train notes OpenBLAS's AVX2 kernels on an AVX-512 CPU" bash -c \
    "OPENBLAS_CORETYPE=Haswell \"$cli\" train ${tiny[*]} --steps 1 --out '$work/n.ckpt' --no-final-eval 2>&1 | grep -q 'note: with OPENBLAS_CORETYPE=Haswell, OpenBLAS runs'"
fi
# Recomputing pair rows in backward changes memory, not numbers: the same held-out and last losses.
again=$("$cli" train "${tiny[@]}" --steps 6 --eval-every 3 --eval-samples 32 --out "$work/r.ckpt" --json --no-final-eval --recompute)
losses() { grep -oE '"(test_loss|last_loss)":[^,]*' <<<"$1"; }
check "train --recompute reports its losses" test "$(losses "$again" | wc -l)" -eq 3
check "train --recompute gives the same losses" test "$(losses "$again")" = "$(losses "$out")"
# The batch split over the cores (on by default for this small model on two cores), and without it.
if [ "$split_here" = yes ]; then
  check "train says it splits the batch" bash -c "\"$cli\" train ${tiny[*]} --steps 1 --out '$work/sp.ckpt' --no-final-eval 2>&1 | grep -q \"each step's batch is split over 2 cores\""
fi
split_off=$("$cli" train "${tiny[@]}" --steps 6 --eval-every 3 --eval-samples 32 --out "$work/so.ckpt" --json --no-final-eval --split-batch off)
check "train --split-batch off trains" grep -q '"event":"finished","step":6' <<<"$split_off"
check "train --split-batch rejects an unknown value" bash -c "out=\$(\"$cli\" train ${tiny[*]} --out '$work/x.ckpt' --split-batch maybe 2>&1); test \$? -ne 0 && grep -q \"unknown batch split 'maybe'\" <<<\"\$out\""
check "resume extends the run" bash -c "\"$cli\" train --resume '$work/m.ckpt' --steps 9 --no-final-eval --json | grep -q '\"step\":9,\"total_steps\":9'"
check "checkpoint info shows the step" bash -c "\"$cli\" checkpoint info '$work/m.ckpt' | grep -q 'training: step 9 of 9'"
# A planned stop: exit 0 at the step asked for, then a resume (with fresh positions) finishes the run.
out=$("$cli" train "${tiny[@]}" --steps 6 --stop-at 4 --out "$work/s.ckpt" --json --no-final-eval)
check "--stop-at exits 0" test $? -eq 0
check "--stop-at stops at that step" grep -q '"event":"stopped","step":4' <<<"$out"
check "a stopped run resumes to its end" bash -c "\"$cli\" train --resume '$work/s.ckpt' --fresh-positions --no-final-eval --json | grep -q '\"event\":\"finished\",\"step\":6'"
check "strip writes a weights-only file" "$cli" checkpoint strip "$work/m.ckpt" --out "$work/w.ckpt"
check "weights-only file is smaller" test "$(stat -c %s "$work/w.ckpt")" -lt "$(stat -c %s "$work/m.ckpt")"
check "weights-only info says so" bash -c "\"$cli\" checkpoint info '$work/w.ckpt' | grep -q 'weights only'"
err=$("$cli" train --resume "$work/w.ckpt" 2>&1)
check "a weights-only file cannot be resumed" test $? -ne 0
check "resuming weights only says why" grep -q "weights only" <<<"$err"
ev=$("$cli" eval --checkpoint "$work/w.ckpt" --samples 50 --json)
check "eval --json has accuracy and confusion" bash -c "grep -q '\"samples\":50,\"accuracy\":' <<<'$ev' && grep -q '\"confusion\":\[\[' <<<'$ev'"
check "eval --precision bf16 names a checkpoint without offset matrices it can read" bash -c "out=\$(\"$cli\" eval --checkpoint '$work/w.ckpt' --device cpu --samples 10 --precision bf16 2>&1); test \$? -ne 0 && grep -qE '\(lor\) has none|lacks' <<<\"\$out\""
if grep -q ' avx512f ' /proc/cpuinfo; then
  check "a tiny Translution trains" "$cli" train --device cpu --model translution --preset tiny --image 28 --patch 7 --depth 1 --dataset dynamic --batch 16 --train-samples 64 --steps 2 --no-final-eval --out "$work/t.ckpt"
  ev=$("$cli" eval --checkpoint "$work/t.ckpt" --device cpu --samples 50 --precision bf16 --json)
  check "eval --precision bf16 evaluates with bfloat16 offset matrices" grep -q '"precision":"bf16","samples":50,"accuracy":' <<<"$ev"
fi
pr=$("$cli" eval --checkpoint "$work/w.ckpt" --protocol --samples 20 --json)
check "eval --protocol --json gives dynamic->dynamic" grep -q '"dynamic->dynamic":[0-9.]' <<<"$pr"
check "eval --protocol prints three test sets" bash -c "\"$cli\" eval --checkpoint '$work/w.ckpt' --protocol --samples 20 | grep -q 'static *dynamic *moving'"
check "sweep writes CSV and heat maps" "$cli" sweep --checkpoint "$work/w.ckpt" --digits 4 --stride 1 --out "$work/s" --json
check "sweep CSV has one row per position" test "$(wc -l <"$work/s.csv")" -eq 2
check "sweep heat map is a colour PNG" bash -c "file '$work/s-accuracy.png' | grep -q 'RGB'"
# Offset knockout: each offset of the bundled Translution's 13 x 13 grid knocked out alone, over a few digits.
mkdir -p "$work/ko"
ko=$("$cli" eval --checkpoint "$models/translution.ckpt" --knockout --samples 4 --out "$work/ko" --json)
check "eval --knockout exits 0" test $? -eq 0
check "eval --knockout --json names the baseline" grep -q '"samples":4,"replacement":"zero","precision":"fp32","baseline_accuracy":' <<<"$ko"
check "knockout CSV has a row per offset" test "$(wc -l <"$work/ko/knockout-translution.csv")" -eq 170
check "knockout CSV header" bash -c "head -1 '$work/ko/knockout-translution.csv' | grep -qx 'dy,dx,accuracy,accuracy_drop,logit_drop'"
check "knockout heat map is 13 x 13 cells of 24 px and its colour bar" bash -c "file '$work/ko/knockout-translution.png' | grep -q 'PNG image data, 330 x 312, 8-bit/color RGB'"
check "knockout text names the offsets that matter most" bash -c "\"$cli\" eval --checkpoint '$models/lor.ckpt' --knockout --replacement mean --samples 2 --out '$work/ko' 2>/dev/null | grep -q 'the 10 that matter most'"
check "knockout refuses --protocol with it" bash -c "! \"$cli\" eval --checkpoint '$models/lor.ckpt' --knockout --protocol --out '$work/ko' 2>/dev/null"
check "knockout refuses an --out that is not a folder" bash -c "out=\$(\"$cli\" eval --checkpoint '$models/lor.ckpt' --knockout --out '$work/ko/knockout-lor.csv' 2>&1); test \$? -ne 0 && test \$(wc -l <<<\"\$out\") -eq 1 && grep -q 'is not a folder' <<<\"\$out\""
mkdir -p "$work/ko-stop"
"$cli" eval --checkpoint "$models/translution.ckpt" --knockout --samples 500 --out "$work/ko-stop" >/dev/null 2>"$work/ko-stop.err" &
ko_pid=$!
sleep 6
kill -INT $ko_pid
wait $ko_pid
check "Ctrl-C stops a knockout map with status 130" test $? -eq 130
check "a stopped knockout map says so" grep -q 'no file written' "$work/ko-stop.err"
check "a stopped knockout map writes no file" test -z "$(ls -A "$work/ko-stop")"

# Shift metrics: consistency, worst case and equivariance of a bundled model, sized down.
sm=$("$cli" eval --checkpoint "$models/lor.ckpt" --shift-metrics --consistency-digits 20 --worst-digits 3 --stride 28 \
  --equivariance-digits 4 --json 2>/dev/null)
check "eval --shift-metrics exits 0" test $? -eq 0
check "shift metrics JSON holds every consistency" grep -q '"consistency_random_pairs":{"shift_px":0,"digits":20,.*"consistency_1px":{"shift_px":1,"digits":20,.*"flip_rate_1px":' <<<"$sm"
check "shift metrics JSON holds the whole-patch shift" grep -q '"consistency_whole_patch":{"shift_px":12,' <<<"$sm"
check "shift metrics JSON: worst case over a 3 x 3 grid" grep -q '"worst_case":{"digits":3,"stride_px":28,"positions":9,' <<<"$sm"
check "shift metrics JSON: equivariance of the embedding and 4 blocks" test "$(grep -o '"layer":' <<<"$sm" | wc -l)" -eq 5
check "shift metrics text names every layer" bash -c "\"$cli\" eval --checkpoint '$models/lor.ckpt' --shift-metrics --consistency-digits 4 --worst-digits 1 --stride 56 --equivariance-digits 2 2>/dev/null | grep -q 'block 4'"
check "a shift-metrics option without --shift-metrics is refused" bash -c "! \"$cli\" eval --checkpoint '$models/lor.ckpt' --stride 4 2>/dev/null"
check "--shift-metrics refuses --protocol" bash -c "! \"$cli\" eval --checkpoint '$models/lor.ckpt' --shift-metrics --protocol 2>/dev/null"
"$cli" data render --dataset mnist --split test --index 0 --out "$work/seven.png" >/dev/null
check "predict prints probabilities" bash -c "\"$cli\" predict --checkpoint '$work/w.ckpt' '$work/seven.png' | grep -q ' 9:0\.'"
check "predict --json" bash -c "\"$cli\" predict --checkpoint '$work/w.ckpt' --json '$work/seven.png' | grep -q '\"probabilities\":\['"
err=$("$cli" predict --checkpoint "$work/w.ckpt" "$ROOT_DIR/README.md" 2>&1)
check "predict on a text file exits non-zero" test $? -ne 0
check "predict on a text file says so" grep -q "README.md is not a PNG or JPEG image" <<<"$err"
# Attribution: both methods on a bundled model write a CSV of the canvas's rows and a colour PNG;
# a bad argument is one line.
attribute_checks() {
  local a=(attribute --checkpoint "$models/translution.ckpt" "$work/seven.png" --out "$work/attr")
  local out
  out=$("$cli" "${a[@]}" --method ig --steps 8)
  check "attribute --method ig exits 0 and reports completeness" bash -c "test $? -eq 0 && grep -q 'attributions sum to .*gap [0-9.]*%' <<<'$out'"
  check "attribute writes the map as 84 rows of 84 values" bash -c "test \$(wc -l <'$work/attr/seven.ig.csv') -eq 84 &&
    test \$(head -1 '$work/attr/seven.ig.csv' | tr ',' '\n' | wc -l) -eq 84"
  check "attribute writes a colour PNG" bash -c "file '$work/attr/seven.ig.png' | grep -q 'RGB'"
  out=$("$cli" "${a[@]}" --method occlusion --json)
  check "attribute --method occlusion --json uses the patch" grep -q '"occluder":12' <<<"$out"
  check "occlusion writes its files" test -s "$work/attr/seven.occlusion-12.csv" -a -s "$work/attr/seven.occlusion-12.png"
  check "attribute --occluder 4" bash -c "\"$cli\" ${a[*]} --method occlusion --occluder 4 --class 3 --json | grep -q '\"class\":3,'"
  # Placed in the canvas's top-left corner, the digit's integrated gradients lie in its 28x28 frame: a
  # black pixel differs nothing from the black baseline, so it gets exactly zero.
  out=$("$cli" "${a[@]}" --method ig --steps 8 --at 0,0 --json)
  check "attribute --at 0,0 reports the placement" grep -q '"at":\[0,0\]' <<<"$out"
  check "attribute --at 0,0 attributes only inside the frame" awk -F, '
    { for (c = 1; c <= NF; ++c) if ($c + 0 != 0) { inked = 1; if (NR > 28 || c > 28) outside = 1 } }
    END { exit !(inked && !outside) }' "$work/attr/seven.ig.csv"
  : >"$work/attr-file"
  local bad
  for bad in "--method shap" "--method occlusion --occluder 85" "--method occlusion --steps 8" "--class 10" \
             "--method ig --out $work/attr-file" "--at 57,0" "--at 3"; do
    # shellcheck disable=SC2086
    "$cli" "${a[@]}" $bad >/dev/null 2>"$work/attr.err"
    check "attribute $bad fails in one line" bash -c "test $? -ne 0 && test \$(wc -l <'$work/attr.err') -eq 1 && grep -q '^error: ' '$work/attr.err'"
  done
}
attribute_checks
head -c 5000 "$work/m.ckpt" >"$work/cut.ckpt"
err=$("$cli" eval --checkpoint "$work/cut.ckpt" 2>&1)
check "truncated checkpoint exits non-zero" test $? -ne 0
check "truncated checkpoint is named" grep -q "cut.ckpt is truncated" <<<"$err"
"$cli" train "${tiny[@]}" --steps 20 --lr 1e30 --clip 0 --warmup 0 --no-final-eval --checkpoint-every 1 --out "$work/d.ckpt" >/dev/null 2>"$work/d.err"
check "a diverging run exits 3" test $? -eq 3
check "a diverging run says why" grep -q "the loss became\|the gradient norm became" "$work/d.err"
check "a diverging run keeps its last good checkpoint" bash -c "\"$cli\" checkpoint info '$work/d.ckpt' >/dev/null"
check "train without --out is an error" bash -c "! \"$cli\" train --model lor 2>/dev/null"
# Without --checkpoint-every nothing was on disk when it diverged: the last good state is written, so the
# file its messages name exists and loads.
"$cli" train "${tiny[@]}" --steps 20 --lr 1e9 --clip 0 --warmup 0 --no-final-eval --out "$work/e.ckpt" >"$work/e.out" 2>"$work/e.err"
check "a diverged run without checkpoints exits 3" test $? -eq 3
check "the checkpoint a diverged run names exists" bash -c "grep -q 'e.ckpt holds step' '$work/e.err' &&
  \"$cli\" checkpoint info '$work/e.ckpt' >/dev/null"

# `model info` counts from the config alone: any size at once, a size beyond 64 bits an error,
# and more blocks than a model may have (1,024) an error.
for config in "--model translution --preset A --image 840 --patch 4" "--model attention --depth 1024" \
              "--model lor --dim 1000000" "--model attention --image 100000 --patch 1"; do
  # shellcheck disable=SC2086
  check "model info $config answers from the config" bash -c "timeout 10 \"$cli\" model info $config | grep -q '^parameters'"
done
timeout 5 "$cli" model info --model translution-abs --image 100000 --patch 1 >/dev/null 2>"$work/overflow.err"
check "a model too large to count is an error" test $? -eq 1
check "a model of 1,025 blocks is an error naming the limit" bash -c \
  "timeout 5 \"$cli\" model info --model attention --depth 1025 2>&1 | grep -q 'more than the 1024 blocks'"
check "its error is one line" bash -c "test \$(wc -l <'$work/overflow.err') -eq 1 && grep -q 'overflows 64-bit' '$work/overflow.err'"

# Every command with bad input: a non-zero exit and one line, "error: ...", never a stack trace.
printf 'not a checkpoint' >"$work/not.ckpt"
printf 'not a picture' >"$work/not.png"
bad_inputs=(
  "eval --checkpoint $work/not.ckpt"
  "sweep --checkpoint $work/not.ckpt --out $work/sweep-bad"
  "predict --checkpoint $work/not.ckpt $work/a.png"
  "predict --checkpoint $ROOT_DIR/resources/models/lor.ckpt $work/not.png"
  "checkpoint info $work/not.ckpt"
  "checkpoint strip $work/not.ckpt --out $work/stripped.ckpt"
  "train --resume $work/not.ckpt"
  "train --model lor --batch 0 --out $work/batch0.ckpt"
  "bench --model attention --preset tiny --image 100000 --patch 1 --mode infer --steps 1"
  "data render --dataset static --split test --index 99999 --out $work/r.png"
  "model info --model lor --patch 5"
)
for bad in "${bad_inputs[@]}"; do
  # shellcheck disable=SC2086
  timeout 60 "$cli" $bad >/dev/null 2>"$work/bad.err"
  status=$?
  check "'$bad' fails with one line and no trace" bash -c "test $status -ne 0 && test $status -ne 124 &&
    test \$(wc -l <'$work/bad.err') -eq 1 && grep -q '^error: ' '$work/bad.err' && ! grep -q 'frame #' '$work/bad.err'"
done
check "nothing was written for them" bash -c "test ! -e '$work/stripped.ckpt' && test ! -e '$work/batch0.ckpt' && test ! -e '$work/r.png'"

# A run that will not fit is refused before anything is allocated: at once, with one line naming the
# memory it needs, what is available and what would fit, and nothing written. The override stands for
# a 24 GB machine, whatever this one has (the estimate alone is tens of GB).
ms() { echo $(($(date +%s%N) / 1000000)); }
# LibTorch's own start-up (its operator registry) takes most of a second of CPU on the 2-core machine, and
# more while other tests run beside this one: a bare start and the refusal are timed in turns, the fastest
# of three of each kept, and the refusal must come within a second, or within twice a bare start.
refuse() {
  TRANSLUTION_AVAILABLE_MEMORY=24000000000 "$cli" train --model translution --preset A --image 84 --patch 7 \
    --batch 128 --steps 1 --out "$work/x.ckpt" >"$work/oom.out" 2>"$work/oom.err"
}
startup=100000 elapsed=100000
for _ in 1 2 3; do
  t0=$(ms)
  "$cli" model list >/dev/null
  t=$(($(ms) - t0))
  ((t < startup)) && startup=$t
  t0=$(ms)
  refuse
  status=$?
  t=$(($(ms) - t0))
  ((t < elapsed)) && elapsed=$t
done
limit=$((2 * startup > 1000 ? 2 * startup : 1000))
check "a run that will not fit is refused" test $status -eq 1
check "at once (${elapsed} ms; a bare start ${startup} ms)" test $elapsed -lt $limit
check "in one line naming need, availability and what fits" bash -c "test \$(wc -l <'$work/oom.err') -eq 1 &&
  grep -Eq '^error: training translution ViT-A/7 .* needs ~[0-9.]+ GB .* but 24.0 GB is available .*: .*fits' '$work/oom.err'"
check "and writes nothing" bash -c "test ! -e '$work/x.ckpt' && test ! -s '$work/oom.out'"
if [ -x /usr/bin/time ]; then  # and allocates nothing: its peak is a bare start's
  bare_kb=$(/usr/bin/time -f %M "$cli" model list 2>&1 >/dev/null | tail -1)
  refused_kb=$(TRANSLUTION_AVAILABLE_MEMORY=24000000000 /usr/bin/time -f %M "$cli" train --model translution \
    --preset A --image 84 --patch 7 --batch 128 --steps 1 --out "$work/x.ckpt" 2>&1 >/dev/null | tail -1)
  check "with the memory of a bare start (${refused_kb} against ${bare_kb} kB)" test $((refused_kb - bare_kb)) -lt 20000
fi
cat "$work/oom.err"
for command in train bench eval sweep predict; do
  check "$command --help documents --force" bash -c "\"$cli\" $command --help | grep -qE -- '--force +skips the memory check'"
done
# --help is a plain option list, one line an option (two where its name and choices are long), not
# documentation; it exits 0 wherever it appears. train has the most options, 45.
help=$("$cli" train --help)
check "train --help exits 0" test $? -eq 0
check "train --help is short ($(wc -l <<<"$help") lines)" test "$(wc -l <<<"$help")" -lt 62
check "--help after other options shows the command's help" bash -c "\"$cli\" bench --model lor --help | grep -q -- '--kernels'"
check "translution without a command prints its help and exits 2" bash -c "out=\$(\"$cli\"); test \$? -eq 2 && grep -q 'Subcommands:' <<<\"\$out\""
check "an unknown option is one line naming it" bash -c "out=\$(\"$cli\" train --model lor --out x.ckpt --bogus 2>&1); test \$? -eq 1 && test \$(wc -l <<<\"\$out\") -eq 1 && grep -q '^error: .*--bogus' <<<\"\$out\""
elapsed=100000
for _ in 1 2 3; do
  t0=$(ms)
  "$cli" model info --model translution --preset A --image 840 --patch 4 >"$work/info.out"
  t=$(($(ms) - t0))
  ((t < elapsed)) && elapsed=$t
done
check "model info estimates a huge model's memory at once (${elapsed} ms)" bash -c "test $elapsed -lt $limit &&
  grep -q '^memory ' '$work/info.out' && grep -Eq '^ +train batch 32 CUDA --recompute +[0-9.]+ [MGT]B' '$work/info.out'"
check "model info --json has the estimate" bash -c "\"$cli\" model info --model lor --json |
  grep -q '\"memory\":\\[{\"mode\":\"infer\",\"batch\":1,\"device\":\"cpu\"'"

# PyTorch interop: a state dict written by the public Translution code in, a prediction, and out again.
fixtures="$ROOT_DIR/tests/fixtures/pytorch/data"
small=(--image 12x8 --patch 4 --channels 1 --classes 10 --depth 2 --dim 16 --heads 2 --head-dim 8 --mlp-dim 32)
mnist=(--image 28 --patch 7 --channels 1 --classes 10 --depth 2 --dim 16 --heads 2 --head-dim 8 --mlp-dim 32)
check "import a public KV-Translution state dict" bash -c "\"$cli\" import '$fixtures/translution_kv_mnist.pt' --model translution-kv ${mnist[*]} --out '$work/kv.ckpt' | grep -q 'public translution model, translution-kv'"
check "predict with the imported model" bash -c "\"$cli\" predict --checkpoint '$work/kv.ckpt' '$work/seven.png' | grep -q ' 9:'"
check "the imported checkpoint names its source" bash -c "\"$cli\" checkpoint info '$work/kv.ckpt' | grep -q 'imported_as=public translution'"
check "export to PyTorch" bash -c "\"$cli\" export '$work/kv.ckpt' --to pytorch '$work/kv.pt' | grep -q 'ViT/models/translution.py'"
check "export, import: the same checkpoint weights" bash -c "\"$cli\" import '$work/kv.pt' --model translution-kv ${mnist[*]} --out '$work/kv2.ckpt' >/dev/null &&
  test \"\$(\"$cli\" predict --checkpoint '$work/kv.ckpt' --json '$work/seven.png')\" = \"\$(\"$cli\" predict --checkpoint '$work/kv2.ckpt' --json '$work/seven.png')\""
check "import a public LoR hybrid" bash -c "\"$cli\" import '$fixtures/lor_translution_qkv_hybrid.pt' --model rope --first-model lor --lor-dim 4 ${small[*]} --out '$work/lor.ckpt' >/dev/null && \"$cli\" checkpoint info '$work/lor.ckpt' | grep -q 'lor_value_slices=true'"
err=$("$cli" import "$fixtures/translution_kv.pt" --model translution "${small[@]}" --out "$work/wrong.ckpt" 2>&1)
check "another architecture: one line naming the key, nothing written" bash -c "test $? -ne 0 && test \$(wc -l <<<\"$err\") -eq 1 &&
  grep -q \"translution_kv.pt: 'translution.layers.0.0.to_q.unique_params' is missing\" <<<\"$err\" && test ! -e '$work/wrong.ckpt'"
err=$("$cli" import "$ROOT_DIR/README.md" --model translution-kv "${small[@]}" --out "$work/wrong.ckpt" 2>&1)
check "a file that is not a PyTorch archive: one line" bash -c "test $? -ne 0 && test \$(wc -l <<<\"$err\") -eq 1 && grep -q 'not a PyTorch archive' <<<\"$err\""
err=$("$cli" import "$fixtures/refused_global.pt" --model translution-kv "${small[@]}" --out "$work/wrong.ckpt" 2>&1)
check "a pickle asking for a function: one line naming it" bash -c "test $? -ne 0 && test \$(wc -l <<<\"$err\") -eq 1 && grep -q 'posix.getcwd' <<<\"$err\""
err=$("$cli" export "$work/lor-dims.ckpt" --to pytorch "$work/w.pt" 2>&1)
check "a model with no public counterpart is not exported" bash -c "test $? -ne 0 && test \$(wc -l <<<\"$err\") -eq 1 && test ! -e '$work/w.pt'"
echo "$err"
check "model list has the RoPE variants" bash -c "\"$cli\" model list | grep -q '^  rope-translution ' && \"$cli\" model list | grep -q '^  lor-rope-translution '"

# LibTorch's failures are one line naming the problem, never a stack trace (--verbose shows it).
# --force: past the memory check, so that LibTorch's own allocation fails. 10^12 tokens: the position
# embedding alone is 256 TB, beyond the 128 TB a process can address, so it fails at once on any machine
# (a 2.5 TB one did not on a 128 GB machine that overcommits memory).
huge=(--model attention --preset tiny --image 1000000 --patch 1 --steps 1 --force --out "$work/huge.ckpt")
timeout 10 "$cli" train "${huge[@]}" >/dev/null 2>"$work/huge.err"
check "a model that cannot be allocated is an error" test $? -eq 1
check "the error is one line without a stack trace" bash -c "test \$(wc -l <'$work/huge.err') -eq 1 && ! grep -q 'frame #' '$work/huge.err'"
check "and nothing was written" test ! -e "$work/huge.ckpt"
timeout 10 "$cli" train "${huge[@]}" --verbose >/dev/null 2>"$work/verbose.err"
check "--verbose shows LibTorch's trace" grep -q 'frame #' "$work/verbose.err"

# Checkpoints are safetensors: Python's standard library reads one. Format 1 (a LibTorch archive) opens only
# through `checkpoint upgrade`, which reads it with the project's own bounded readers; hostile files of
# either format and a hostile state dict: one line, a non-zero exit, in under 2 s and 500 MB.
format1=$ROOT_DIR/tests/fuzz/seeds/format1
check "checkpoint upgrade converts a format-1 run with its training state" bash -c "\"$cli\" checkpoint upgrade '$format1/lor-with-training-state.ckpt' '$work/up.ckpt' | grep -q 'with its training state at step 2' &&
  \"$cli\" checkpoint info '$work/up.ckpt' | grep -q 'AdamW state for 31 parameters'"
check "checkpoint upgrade keeps a weights-only file so" bash -c "\"$cli\" checkpoint upgrade '$format1/attention-weights.ckpt' '$work/up-w.ckpt' | grep -q 'weights only' &&
  \"$cli\" checkpoint info '$work/up-w.ckpt' | grep -q 'training: none'"
"$cli" predict --checkpoint "$format1/attention-weights.ckpt" "$work/a.png" >/dev/null 2>"$work/format1.err"
check "a format-1 file elsewhere: one line naming the upgrade" bash -c "test $? -ne 0 && test \$(wc -l <'$work/format1.err') -eq 1 &&
  grep -q 'run .translution checkpoint upgrade' '$work/format1.err'"
# The upgraded file against the format-1 one, by Python alone: the safetensors layout and both digests, and
# every weight's bytes equal to its record in the old archive (its pickle read by a restricted Unpickler).
check "Python's standard library reads the upgraded checkpoint and finds the old weights" python3 - "$work/up.ckpt" "$format1/lor-with-training-state.ckpt" <<'EOF'
import collections, hashlib, io, json, pickle, struct, sys, zipfile
new = open(sys.argv[1], 'rb').read()
n, = struct.unpack('<Q', new[:8])
header, buffer = json.loads(new[8:8 + n]), new[8 + n:]
meta = header.pop('__metadata__')
at = 0
for name, t in sorted(header.items(), key=lambda kv: kv[1]['data_offsets']):
    assert t['data_offsets'][0] == at, name
    at = t['data_offsets'][1]
assert at == len(buffer) and hashlib.md5(buffer).hexdigest() == meta['data_md5']
digest = meta.pop('header_md5')
signed = dict(header, __metadata__=meta)
assert hashlib.md5(json.dumps(signed, sort_keys=True, separators=(',', ':'), ensure_ascii=False).encode()).hexdigest() == digest
old = open(sys.argv[2], 'rb').read()
archive = zipfile.ZipFile(io.BytesIO(old[old.index(b'\n') + 1:]))
class Module:
    def __setstate__(self, state): self.__dict__.update(state)
class Old(pickle.Unpickler):
    def find_class(self, module, name):
        if module.startswith('__torch__') and name == 'Module': return Module
        if (module, name) == ('torch._utils', '_rebuild_tensor_v2'): return lambda s, offset, *rest: (s, offset)
        if (module, name) == ('collections', 'OrderedDict'): return collections.OrderedDict
        if module == 'torch' and name.endswith('Storage'): return name
        raise pickle.UnpicklingError(module + '.' + name)
    def persistent_load(self, pid): return pid[2]
root = Old(io.BytesIO(archive.read('archive/data.pkl'))).load()
def weights(module, prefix=''):
    for key, value in module.__dict__.items():
        if isinstance(value, Module): yield from weights(value, prefix + key + '.')
        else: yield prefix + key, value
found = 0
for name, (storage, offset) in weights(root.weights):
    begin, end = header[name]['data_offsets']
    record = archive.read('archive/data/' + storage)
    assert record[offset * 4:offset * 4 + end - begin] == buffer[begin:end], name
    found += 1
assert found == sum(1 for k in header if not k.startswith(('optimizer.', 'training.'))), found
EOF
# Hostile files, made here: a format-1 checkpoint whose pickle nests 1,000,000 deep (its MD5 recomputed), a
# state dict whose pickle nests lists 100,000 deep, a safetensors header nested 1,000,000 deep.
python3 - "$work" <<'EOF'
import hashlib, io, struct, sys, zipfile
work = sys.argv[1]
def archive(folder, pickle):
    out = io.BytesIO()
    with zipfile.ZipFile(out, 'w', zipfile.ZIP_STORED) as z:
        z.writestr(folder + '/data.pkl', pickle)
        z.writestr(folder + '/version', '3\n')
    return out.getvalue()
deep = b'\x80\x02' + b']' * 1000000 + b'a' * 999999 + b'.'
payload = archive('archive', deep)
header = 'translution-checkpoint 1 bytes=%d md5=%s\n' % (len(payload), hashlib.md5(payload).hexdigest())
open(work + '/deep1.ckpt', 'wb').write(header.encode() + payload)
open(work + '/deep.pt', 'wb').write(archive('deep', b'\x80\x02' + b']' * 100000 + b'a' * 99999 + b'.'))
text = b'{"a":' + b'[' * 1000000 + b']' * 1000000 + b'}'
open(work + '/deep2.ckpt', 'wb').write(struct.pack('<Q', len(text)) + text)
EOF
hostile=(
  "checkpoint info $work/deep1.ckpt|format 1"
  "predict --checkpoint $work/deep1.ckpt $work/a.png|format 1"
  "checkpoint upgrade $work/deep1.ckpt $work/deep-up.ckpt|the pickle"
  "checkpoint info $work/deep2.ckpt|nests deeper than 64"
  "predict --checkpoint $work/deep2.ckpt $work/a.png|nests deeper than 64"
  "import $work/deep.pt --model translution-kv --preset tiny --out $work/deep-import.ckpt|nests deeper than 1,000"
)
for entry in "${hostile[@]}"; do
  args=${entry%%|*} says=${entry##*|}
  # shellcheck disable=SC2086
  # CPU seconds, not wall time: on a loaded machine the program's own start (LibTorch's libraries) takes seconds.
  /usr/bin/time -f '%U %S %M' -o "$work/hostile.time" timeout 20 "$cli" $args >/dev/null 2>"$work/hostile.err"
  status=$?
  read -r user system kilobytes < <(tail -n 1 "$work/hostile.time")  # after time's "Command exited with ..." line
  echo "$args: $(cat "$work/hostile.err") (${user} s user, ${system} s system, ${kilobytes} KB)"
  check "'$args': one line naming it, fast and small" bash -c "test $status -ne 0 && test $status -ne 124 &&
    test \$(wc -l <'$work/hostile.err') -eq 1 && grep -q '$says' '$work/hostile.err' &&
    awk 'END { exit !(\$1 + \$2 < 2 && \$3 < 500000) }' '$work/hostile.time'"
done
check "nothing was written for them" bash -c "test ! -e '$work/deep-up.ckpt' && test ! -e '$work/deep-import.ckpt'"
# Weights holding NaN (digests dropped, as a Python edit leaves them): refused by name, listed by info,
# and a difference of NaN.
python3 - "$models/lor.ckpt" "$work/nan.ckpt" <<'EOF'
import json, struct, sys
b = open(sys.argv[1], 'rb').read()
n, = struct.unpack('<Q', b[:8])
header, buffer = json.loads(b[8:8 + n]), bytearray(b[8 + n:])
for digest in ('data_md5', 'header_md5'): del header['__metadata__'][digest]
begin = header['head.weight']['data_offsets'][0]
buffer[begin:begin + 4] = struct.pack('<f', float('nan'))
text = json.dumps(header).encode()
open(sys.argv[2], 'wb').write(struct.pack('<Q', len(text)) + text + bytes(buffer))
EOF
for bad in "predict --checkpoint $work/nan.ckpt $work/a.png" "eval --checkpoint $work/nan.ckpt --samples 10" "train --resume $work/nan.ckpt"; do
  # shellcheck disable=SC2086
  "$cli" $bad >/dev/null 2>"$work/nan.err"
  check "'$bad' is refused, naming the tensor" bash -c "test $? -ne 0 && test \$(wc -l <'$work/nan.err') -eq 1 && grep -q \"'head.weight' holds NaN\" '$work/nan.err'"
done
check "checkpoint info lists the NaN instead" bash -c "\"$cli\" checkpoint info '$work/nan.ckpt' | grep -q \"not finite: 'head.weight' holds NaN\""
check "checkpoint diff says NaN" bash -c "\"$cli\" checkpoint diff '$models/lor.ckpt' '$work/nan.ckpt' | grep -q 'largest |difference| nan in head.weight'"

echo "e2e_cli: $failures failed"
test $failures -eq 0
