#include "nn/memory_estimate.h"

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include "cpu/offset_buckets.h"
#include "cpu/pair_projection.h"
#include "nn/model_size.h"
#include "nn/self_attention.h"
#include "nn/vit.h"
#include "util/device.h"
#include "util/engine_options.h"

namespace translution {
namespace {

// The peak is counted as tensors of fp32 (bf16 training keeps activations fp32 too).
constexpr double kFloat = 4.0;
// CPU: the resident set of a process with LibTorch, the BLAS's buffers and the
// engine's threads, before any model exists, read from one image's forward above
// each model's weights (docs/performance.md, "Memory and `--recompute`"). The
// guard leaves it out: the process running the check holds it.
constexpr double kCpuProcessBytes = 180e6;
// Bytes a (query, source) pair costs a block that builds a pair table (nn/token_layout.h's
// RelativeTable: the int64 entry as a tensor and as a host copy, and two visibility flags),
// and GPSA's [N, N, 3] double distance features on top (with the host vector they are built
// from); as measured, the resident set of rope and gpsa over attention-nope (docs/performance.md).
constexpr double kTablePairBytes = 18, kGpsaPairBytes = 27;
// Under autocast to bfloat16 the products' outputs are bfloat16 while softmax, LayerNorm
// and GELU keep fp32 (util/full_precision.h), and autocast holds a bfloat16 copy of each
// weight it casts through the step. What the step keeps then takes a share of its fp32
// bytes that differs by model: measured (ViT-A/12 at batch 256 on an H200), 0.52-0.53
// for Translution, whose pair rows are products, 0.65-0.69 for LoR and 0.75 for
// self-attention, whose fp32 attention maps weigh more; 0.62 for a small Translution
// on the CPU. One share for all: 0.65 puts every measured peak within a quarter
// (Translution's 16-18% above, self-attention's 12% below).
constexpr double kAutocastShare = 0.65;
// CUDA: cuBLAS's workspace, which PyTorch 2.x takes from the caching allocator
// (32 MiB per handle on Hopper GPUs, the largest default), so it counts in the
// allocator's peak; nothing else of the process does.
constexpr double kCudaWorkspaceBytes = 32.0 * 1024 * 1024;

// One block's sizes: N tokens (keys), M queries (N, or 1 in the last block,
// which computes the CLS token's output alone: nn/vit.h), width C, inner width
// D = heads x head dim, H heads, MLP width F, E matrices per relative
// projection, B images. Every pair of a grid is visible: R = M N pair rows.
struct Dims {
  double N, M, C, D, H, F, E, B;
  double shares;  // CPU training: how many parts the batch splits into, one per core
  double R() const { return M * N; }
};

// A CPU training step on two cores splits the batch of a model whose weights take
// at most 64 MiB, each core running its share (train/training_threads.h). The
// shares' tensors coexist, so they count as one batch; only rules that look at a
// share's size (LoR's vector lanes) see the split.
double batch_shares(const ViTConfig& c, const MemoryTarget& target) {
  const bool small = kFloat * double(parameter_count(c)) <= 64.0 * 1024 * 1024;
  return target.device == MemoryDevice::Cpu && target.cores == 2 && small ? 2.0 : 1.0;
}

// A block's floats: what forward keeps for backward (saved), and what its
// backward (training) or its forward (inference) holds besides while it runs.
struct Floats {
  double saved = 0, working = 0;
};

// How the relative projections run, as far as what they keep: the CPU's blocked path, or
// LibTorch's ops (on a GPU, or anywhere under the reference options) with an algorithm.
struct ProjectionPath {
  bool plain_ops = false;
  MemoryDevice device = MemoryDevice::Cpu;
  ProjectionAlgorithm algorithm = ProjectionAlgorithm::Auto;
};

// LayerNorms, residuals and MLP of a pre-norm block. Saved: norm1's input [N, C];
// for the M outputs the residual h (norm2's input), norm2's output (fc1's input),
// fc1's output (GELU's input), GELU's output (fc2's input) and the attention's
// output (to_out's input). Working: the gradients of the MLP's hidden layer and of
// the block's input and output (training), or x, h and one hidden layer (inference).
Floats block_floats(const Dims& d, bool out_proj, bool training) {
  Floats f;
  const double out = out_proj ? d.M * d.D : 0.0;
  if (training) {
    f.saved = d.B * (d.N * d.C + d.M * (2 * d.C + 2 * d.F) + out);
    f.working = d.B * (2 * d.M * d.F + 3 * d.N * d.C);
  } else {
    f.working = d.B * (3 * d.N * d.C + d.M * d.F + out);
  }
  return f;
}

// Self-attention and the position-based baselines: q, k, v [N, 3D] of the
// normalised input and the attention [H, M, N] (saved by the products and the
// softmax); backward adds their gradients. The last block's CLS query in a batch
// meets the unprojected inputs instead (nn/self_attention.h): no [N, 3D] then.
// `extra`: what a baseline keeps besides (its products with offset vectors,
// biased logits, gates, rotated queries and keys).
Floats plain_attention_floats(const EngineOptions& engine, const Dims& d, double extra, bool may_reassociate,
                              bool training) {
  const bool reassociated = may_reassociate && d.M < d.N && d.B >= 2 && engine.query_reassociation;
  const double qkv = reassociated ? 2 * d.M * d.H * d.C : 3 * d.N * d.D;
  Floats f;
  if (training) {
    f.saved = d.B * (d.N * d.C + qkv + d.H * d.M * d.N + extra);
    f.working = d.B * (qkv + 2 * d.H * d.M * d.N + extra);
  } else {
    f.working = d.B * (qkv + d.H * d.M * d.N + extra);
  }
  return f;
}

// The pair rows [R, B, width] of the relative projections (nn/relative_projection.h),
// `sides` of them. The CPU's blocked path (cpu/pair_blocks.h) keeps the rows of
// relative sides only and recomputes into a per-core block, so `--recompute`
// leaves nothing there; the GPU path keeps both sides of the logits (a plain side
// as gathered rows) and, recomputing, holds a layer's rows again in backward.
// Its products add the [N, B, E, width] all-token intermediate, the offset-batched
// slots, or per matrix the gathered inputs and their gradients [R, B, C_in] (twice)
// in backward. Auto on a GPU is cpu/pair_projection.h's choice for a float bank.
Floats pair_row_floats(const Dims& d, double width, double in_width, double relative_sides, double gpu_sides,
                       bool training, bool recompute, const ProjectionPath& path) {
  Floats f;
  const bool gpu = path.plain_ops;
  const double rows = d.B * d.R() * width;
  const ProjectionAlgorithm algorithm =
      path.algorithm == ProjectionAlgorithm::Auto && path.device == MemoryDevice::Cuda
          ? auto_projection_on_gpu(d.N * d.B * d.E * width * kFloat)
          : path.algorithm;
  // Offset-batched: the slots' gathered inputs and their products (backward: their gradients too).
  const double products = !gpu ? 0.0
                          : algorithm == ProjectionAlgorithm::OffsetBatched
                              ? kMaxOffsetPadding * d.B * d.R() * (2 * in_width + width)
                          : algorithm == ProjectionAlgorithm::AllTokens
                              ? d.B * (d.N * d.E * width + 2 * d.R())
                              : 2 * d.B * d.R() * in_width;
  if (!training) {  // the sides' rows of one layer live together while its logits are formed
    f.working = (gpu ? 2 * rows : 0.0) + products;
    return f;
  }
  const double kept = gpu ? gpu_sides : relative_sides;
  f.saved = recompute ? 0.0 : kept * rows;
  f.working = products + (recompute && gpu ? 2 * rows : 0.0);
  return f;
}

// Translution (ICLR Eq. 1) with any of q, k, v relative. Saved: a token-major copy
// of the input per relative side ([M, C] for q, [N, C] for k and v), a plain
// side's projection [N, D] (and its input [N, C], once), the attention [H, M, N]
// and, for relative values, its pair-ordered copy [H, R]; then the pair rows.
Floats translution_floats(const Dims& d, const AttentionSpec& s, bool training, bool recompute,
                          const ProjectionPath& path) {
  const bool any_plain = !s.rel_q || !s.rel_k || !s.rel_v;
  const double inputs = (s.rel_q ? d.M * d.C : d.M * d.D) + (s.rel_k ? d.N * d.C : d.N * d.D) +
                        (s.rel_v ? d.N * d.C : d.N * d.D) + (any_plain ? d.N * d.C : 0.0);
  const double attention = d.H * d.M * d.N + (s.rel_v ? d.H * d.R() : 0.0);
  Floats logits, values;
  if (s.rel_q || s.rel_k)
    logits = pair_row_floats(d, d.D, d.C, double(s.rel_q) + double(s.rel_k), 2, training, recompute, path);
  if (s.rel_v) values = pair_row_floats(d, d.D, d.C, 1, 1, training, recompute, path);
  Floats f;
  const double rows = std::max(logits.working, values.working);  // one product at a time
  if (training) {
    f.saved = d.B * (inputs + attention) + logits.saved + values.saved;
    f.working = d.B * 2 * d.H * d.M * d.N + rows;
  } else {
    f.working = d.B * (3 * d.N * d.C + 2 * d.H * d.M * d.N + d.M * d.D) + rows;
  }
  return f;
}

// LoR-Translution (ICLR Eq. 2): the shared q, k, v [M + 2N, D] (their input
// [N, C] once), a token-major copy of each low-rank input ([., C1 H] relative,
// [., C2 H] the plain side of the logits), the attention and its pair-ordered
// copy, the values' low-rank sums [M, H, C2 H]; then pair rows of width C2 H.
Floats lor_floats(const Dims& d, const AttentionSpec& s, bool training, bool recompute,
                  const MemoryTarget& target, const ProjectionPath& path) {
  const double c1 = double(s.lor_c1) * d.H, c2 = double(s.lor_c2) * d.H;
  const bool rel_logits = s.rel_q || s.rel_k;
  // On AVX-512 the pair arithmetic of narrow matrices runs across the lanes,
  // which project the rows again in backward instead of keeping them
  // (cpu/pair_lanes.h): where each share of the batch is a multiple of 16 images.
  const auto narrow = [](double w) { return w <= 32 && std::fmod(w, 8) == 0; };
  const bool lanes = !path.plain_ops && target.avx512 && narrow(c1) && narrow(c2) && d.H <= 32 &&
                     std::fmod(d.B, 16 * d.shares) == 0;
  recompute = recompute || (training && lanes);
  double inputs = d.N * d.C + (s.lor_shared ? (d.M + 2 * d.N) * d.D : 0.0);
  if (rel_logits) inputs += d.M * (s.rel_q ? c1 : c2) + d.N * (s.rel_k ? c1 : c2);
  if (s.rel_v) inputs += d.N * c1;
  const double attention = d.H * d.M * d.N + (s.rel_v ? d.H * d.R() + d.M * d.H * c2 : 0.0);
  Floats logits, values;
  if (rel_logits)
    logits = pair_row_floats(d, c2, c1, double(s.rel_q) + double(s.rel_k), 2, training, recompute, path);
  if (s.rel_v) values = pair_row_floats(d, c2, c1, 1, 1, training, recompute, path);
  Floats f;
  const double rows = std::max(logits.working, values.working);
  if (training) {
    f.saved = d.B * (inputs + attention) + logits.saved + values.saved;
    f.working = d.B * (2 * d.H * d.M * d.N + (d.M + 2 * d.N) * d.D) + rows;
  } else {
    f.working = d.B * (inputs + 2 * d.H * d.M * d.N) + rows;
  }
  return f;
}

// The attention of one block, by operator. The baselines keep what self-attention
// keeps and a little more: a [H, M, E] product with the offset vectors (Shaw),
// a biased copy of the logits (Swin), the positional attention and its mix (ConViT),
// rotated queries and keys (RoPE).
Floats attention_floats(const EngineOptions& engine, const ViTConfig& c, const AttentionSpec& s,
                        const Dims& d, bool training, bool recompute, const MemoryTarget& target) {
  // Autocast's bfloat16 tensors take LibTorch's ops, as a GPU does.
  const ProjectionPath path{engine.reference || target.device == MemoryDevice::Cuda || target.bf16_autocast,
                            target.device, engine.projection};
  switch (s.method) {
    case AttentionMethod::SelfAttention: return plain_attention_floats(engine, d, 0, true, training);
    case AttentionMethod::RelativeKeyVector:
    case AttentionMethod::RelativeValueVector:
      return plain_attention_floats(
          engine, d, d.H * d.M * double(relative_entries(c, PairEncoding::Relative)), false, training);
    case AttentionMethod::RelativeBias:
      return plain_attention_floats(engine, d, d.H * d.M * d.N, false, training);
    case AttentionMethod::GatedPositional:
      return plain_attention_floats(engine, d, 3 * d.H * d.M * d.N, false, training);
    case AttentionMethod::Rotary:
      return plain_attention_floats(engine, d, 2 * (d.M + d.N) * d.D, false, training);
    case AttentionMethod::Translution: return translution_floats(d, s, training, recompute, path);
    case AttentionMethod::LoRTranslution: return lor_floats(d, s, training, recompute, target, path);
  }
  return {};
}

// Identical blocks in a row: the first `first_blocks` of a hybrid, the rest, and
// the last, which computes the CLS query alone. Each with its floats and the
// bytes of its parameters' gradients.
struct Run {
  double count = 0;
  Floats floats;
  double gradient_bytes = 0;
};

std::vector<Run> block_runs(const EngineOptions& engine, const ViTConfig& c, double batch, bool training,
                            bool recompute, const MemoryTarget& target) {
  const double N = double(c.tokens()), shares = batch_shares(c, target);
  const int64_t first = std::min(std::max<int64_t>(c.first_blocks, 0), c.depth - 1);
  auto run = [&](int64_t index, double count, double queries) {
    const AttentionSpec s = c.attention_spec(index);
    const Dims d{N,
                 queries,
                 double(c.dim),
                 double(c.heads) * double(c.head_dim),
                 double(c.heads),
                 double(c.mlp_dim),
                 s.relative() ? double(relative_entries(c, s.encoding)) : 0.0,
                 batch,
                 shares};
    const bool out_proj = needs_output_projection({c.dim, c.heads, c.head_dim});
    const Floats block = block_floats(d, out_proj, training),
                 attention = attention_floats(engine, c, s, d, training, recompute, target);
    return Run{count,
               {block.saved + attention.saved, block.working + attention.working},
               kFloat * double(block_parameter_count(c, index))};
  };
  std::vector<Run> runs;
  if (first > 0) runs.push_back(run(0, double(first), N));
  if (c.depth - 1 > first) runs.push_back(run(c.depth - 2, double(c.depth - 1 - first), N));
  runs.push_back(run(c.depth - 1, 1, engine.cls_only_last_block ? 1.0 : N));
  return runs;
}

// Patch embedding: the images, the patches (LayerNorm's input), their normalised
// copy (the Linear's input) and the embedded patches (the second LayerNorm's
// input); with gradients those are kept, without them they are the working set.
Floats embedding_floats(const ViTConfig& c, double batch, bool training) {
  const double patches = double(c.tokens()) - 1,
               patch = double(c.patch) * double(c.patch) * double(c.channels);
  const double pixels = double(c.image_height) * double(c.image_width) * double(c.channels);
  const double kept = pixels + 2 * patches * patch + patches * double(c.dim);
  Floats f;
  if (training) {
    f.saved = batch * kept;
    f.working = batch * (patches * patch + 2 * patches * double(c.dim));
  } else
    f.working = batch * (kept + patches * double(c.dim));
  return f;
}

double baseline_bytes(MemoryDevice device) {
  return device == MemoryDevice::Cpu ? kCpuProcessBytes : kCudaWorkspaceBytes;
}

// The gradients of the head and final LayerNorm, computed first in backward.
double head_gradient_bytes(const ViTConfig& c) {
  return kFloat * (2 * double(c.dim) + double(c.dim) * double(c.classes) + double(c.classes));
}

// The largest of the moments a step goes through, as {activations, gradients}
// in bytes. Backward runs the blocks last to first: when block b's turn comes,
// the kept tensors of blocks 0..b (and the embedding's) are still alive, the
// gradients of blocks b.. exist (b's being written) and b's working set is
// taken. Within a run of identical blocks that sum changes by (saved -
// gradients) per block, so its largest value is at one end of the run. After
// the blocks, the embedding's backward holds every gradient; AdamW's step then
// holds every gradient and nothing else. For Translution at a batch of 32 the
// peak is the start of backward (activations far above one layer's gradients);
// at a batch of 1, its end (every gradient).
std::pair<double, double> training_peak(const ViTConfig& c, const std::vector<Run>& runs,
                                        const Floats& embedding) {
  double all_gradients = kFloat * double(parameter_count(c)), best_sum = -1;
  std::pair<double, double> best{0, all_gradients};
  auto consider = [&](double floats, double gradients) {
    if (kFloat * floats + gradients > best_sum) {
      best_sum = kFloat * floats + gradients;
      best = {kFloat * floats, gradients};
    }
  };
  double saved_before = embedding.saved, gradients_after = head_gradient_bytes(c);
  for (const Run& r : runs) gradients_after += r.count * r.gradient_bytes;
  for (const Run& r : runs) {  // blocks in order: gradients_after counts this run and those after it
    consider(saved_before + r.floats.saved + r.floats.working, gradients_after);  // the run's first block
    consider(saved_before + r.count * r.floats.saved + r.floats.working,
             gradients_after - (r.count - 1) * r.gradient_bytes);  // its last block
    saved_before += r.count * r.floats.saved;
    gradients_after -= r.count * r.gradient_bytes;
  }
  consider(embedding.saved + embedding.working, all_gradients);
  consider(0, all_gradients);
  return best;
}

// The pair tables the blocks build with the model: [N, N] whatever the batch, so a
// small model of a large image is refused before they are built.
double table_bytes(const ViTConfig& c) {
  const double pairs = double(c.tokens()) * double(c.tokens());
  double bytes = 0;
  for (int64_t b = 0; b < c.depth; ++b) {
    const AttentionMethod method = c.attention_spec(b).method;
    if (method == AttentionMethod::SelfAttention) continue;
    bytes +=
        kTablePairBytes * pairs + (method == AttentionMethod::GatedPositional ? kGpsaPairBytes * pairs : 0);
  }
  return bytes;
}

}  // namespace

MemoryEstimate estimate_training(const EngineOptions& engine, const ViTConfig& c, int64_t batch,
                                 bool recompute, const MemoryTarget& target) {
  const double weights = kFloat * double(parameter_count(c));
  const std::vector<Run> runs = block_runs(engine, c, double(batch), true, recompute, target);
  const auto [activations, gradients] = training_peak(c, runs, embedding_floats(c, double(batch), true));
  MemoryEstimate e;
  e.weights = weights;
  e.gradients = gradients;
  e.optimizer = 2 * weights;
  e.activations = activations + table_bytes(c);
  e.baseline = baseline_bytes(target.device);
  // The device step (train/device_step.h: on a GPU, or on LibTorch's ops) keeps every gradient for the
  // run in one buffer, into which backward adds each block's gradients from tensors of their own (a
  // block's at a time), and its update holds one weights-sized temporary after the activations are gone.
  if (engine.reference || target.device == MemoryDevice::Cuda || target.bf16_autocast) {
    double block_gradients = 0;
    for (const Run& r : runs) block_gradients = std::max(block_gradients, r.gradient_bytes);
    const double kept = target.bf16_autocast ? kAutocastShare * activations + weights / 2 : activations;
    e.gradients = weights;
    e.activations = std::max(kept + block_gradients, weights) + table_bytes(c);
  }
  return e;
}

// Without gradients nothing is kept: the peak is the largest working set of one
// block (or of the patch embedding) next to the weights.
MemoryEstimate estimate_inference(const EngineOptions& engine, const ViTConfig& c, int64_t batch,
                                  const MemoryTarget& target) {
  double floats = embedding_floats(c, double(batch), false).working;
  for (const Run& r : block_runs(engine, c, double(batch), false, false, target))
    floats = std::max(floats, r.floats.working);
  MemoryEstimate e;
  e.weights = kFloat * double(parameter_count(c));
  e.activations = kFloat * floats + table_bytes(c);
  e.baseline = baseline_bytes(target.device);
  return e;
}

MemoryTarget memory_target(MemoryDevice device) {
  MemoryTarget target;
  target.device = device;
  target.avx512 = cpu_has_avx512();
  target.cores = int(std::thread::hardware_concurrency());
  return target;
}

const char* memory_device_name(MemoryDevice device) { return device == MemoryDevice::Cpu ? "CPU" : "CUDA"; }

}  // namespace translution
