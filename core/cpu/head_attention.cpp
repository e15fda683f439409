#include "cpu/head_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <torch/autograd.h>

#include "cpu/blas_gemm.h"
#include "cpu/helper_threads.h"
#include "cpu/inference_passes.h"
#include "cpu/training_passes.h"
#include "cpu/vector_math.h"
#include "util/kept_options.h"

namespace translution {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The per-head products are B x H small GEMMs (50 x 50 x 64 for ViT-A). LibTorch's
// CPU bmm runs small batches as one addmm per matrix (in 1.13, the version the CPU
// build links), each with its selects and dispatch (docs/performance.md, "Paths
// that were measured and removed"). On CPU they go to the BLAS directly, reading
// each head's columns in place (q, k and v are often column slices of one qkv
// projection).
bool raw_rows(const at::Tensor& t) {  // BLAS needs a row stride of at least the row length
  return t.dim() >= 3 && blas_gemm_rows_usable(t) && t.stride(-2) >= t.size(-1);
}
bool raw_heads(const at::Tensor& a, const at::Tensor& b) {
  return raw_rows(a) && raw_rows(b) && a.scalar_type() == b.scalar_type();
}

// One head's matrix inside a [B, N, H x dh] tensor (or a [B, H, N, N] one).
template <typename T>
struct HeadView {
  const T* data;
  int64_t batch_stride, row_stride, head_offset;
  const T* at(int64_t b, int64_t h) const { return data + b * batch_stride + h * head_offset; }
};

template <typename T>
HeadView<T> tokens_view(const at::Tensor& x, int64_t dh) {  // x: [B, N, H dh], head h = columns h dh ...
  // A single row's stride is never stepped over but is the BLAS's leading
  // dimension, which must be at least the row (a [B, 1, D] gradient may carry any).
  const int64_t row_stride = x.size(1) == 1 ? std::max(x.stride(1), x.size(2)) : x.stride(1);
  return {x.data_ptr<T>(), x.stride(0), row_stride, dh};
}

template <typename T>
HeadView<T> pairs_view(const at::Tensor& x) {  // x: [B, H, queries, keys] contiguous
  const int64_t rows = x.size(2), keys = x.size(3);
  return {x.data_ptr<T>(), x.size(1) * rows * keys, keys, rows * keys};
}

// For every (b, h): C = op(A) op(B), C written into out at (b, h).
template <typename T>
void per_head(int64_t B, int64_t H, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const HeadView<T>& a,
              const HeadView<T>& b, T* out, int64_t out_batch, int64_t out_row, int64_t out_head) {
  for (int64_t i = 0; i < B; ++i)
    for (int64_t h = 0; h < H; ++h)
      blas_gemm_strided<T>(ta, tb, m, n, k, a.at(i, h), a.row_stride, b.at(i, h), b.row_stride,
                           out + i * out_batch + h * out_head, out_row);
}

// logits[b, h] = Q_bh K_bh^T: Q [B, M, D] (M queries), K [B, N, D] -> [B, H, M, N].
class HeadLogits : public torch::autograd::Function<HeadLogits> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k, int64_t heads) {
    ctx->save_for_backward({q, k});
    ctx->saved_data["heads"] = heads;
    const int64_t B = q.size(0), M = q.size(1), N = k.size(1), dh = q.size(2) / heads;
    at::Tensor out = at::empty({B, heads, M, N}, q.options().memory_format(at::MemoryFormat::Contiguous));
    AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "head_logits", [&] {
      per_head<scalar_t>(B, heads, false, true, M, N, dh, tokens_view<scalar_t>(q, dh),
                         tokens_view<scalar_t>(k, dh), out.data_ptr<scalar_t>(), heads * M * N, N, M * N);
    });
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = ctx->get_saved_variables();
    const at::Tensor &q = s[0], &k = s[1];
    const int64_t H = ctx->saved_data["heads"].toInt(), B = q.size(0), M = q.size(1), N = k.size(1),
                  D = q.size(2);
    const int64_t dh = D / H;
    const at::Tensor g = grads[0].contiguous();
    at::Tensor dq = at::empty({B, M, D}, q.options()), dk = at::empty({B, N, D}, k.options());
    AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "head_logits_backward", [&] {
      const HeadView<scalar_t> gv = pairs_view<scalar_t>(g);
      per_head<scalar_t>(B, H, false, false, M, dh, N, gv, tokens_view<scalar_t>(k, dh),
                         dq.data_ptr<scalar_t>(), M * D, D, dh);  // dQ = G K
      per_head<scalar_t>(B, H, true, false, N, dh, M, gv, tokens_view<scalar_t>(q, dh),
                         dk.data_ptr<scalar_t>(), N * D, D, dh);  // dK = G^T Q
    });
    return {dq, dk, at::Tensor()};
  }
};

// out[b, :, head h] = alpha_bh V_bh: alpha [B, H, M, N], V [B, N, D] -> [B, M, D].
class HeadValues : public torch::autograd::Function<HeadValues> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& alpha_in, const at::Tensor& v,
                            int64_t heads) {
    const at::Tensor alpha = alpha_in.contiguous();
    ctx->save_for_backward({alpha, v});
    ctx->saved_data["heads"] = heads;
    const int64_t B = v.size(0), M = alpha.size(2), N = v.size(1), D = v.size(2), dh = D / heads;
    at::Tensor out = at::empty({B, M, D}, v.options());
    AT_DISPATCH_FLOATING_TYPES(v.scalar_type(), "head_values", [&] {
      per_head<scalar_t>(B, heads, false, false, M, dh, N, pairs_view<scalar_t>(alpha),
                         tokens_view<scalar_t>(v, dh), out.data_ptr<scalar_t>(), M * D, D, dh);
    });
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = ctx->get_saved_variables();
    const at::Tensor &alpha = s[0], &v = s[1];
    const int64_t H = ctx->saved_data["heads"].toInt(), B = v.size(0), M = alpha.size(2), N = v.size(1);
    const int64_t D = v.size(2), dh = D / H;
    const at::Tensor g = grads[0].contiguous();  // [B, M, D]
    at::Tensor dalpha = at::empty_like(alpha), dv = at::empty({B, N, D}, v.options());
    AT_DISPATCH_FLOATING_TYPES(v.scalar_type(), "head_values_backward", [&] {
      const HeadView<scalar_t> gv = tokens_view<scalar_t>(g, dh);
      per_head<scalar_t>(B, H, false, true, M, N, dh, gv, tokens_view<scalar_t>(v, dh),
                         dalpha.data_ptr<scalar_t>(), H * M * N, N, M * N);  // dA = G V^T
      per_head<scalar_t>(B, H, true, false, N, dh, M, pairs_view<scalar_t>(alpha), gv,
                         dv.data_ptr<scalar_t>(), N * D, D, dh);  // dV = A^T G
    });
    return {dalpha, dv, at::Tensor()};
  }
};

// Whether a causal mask (or none) can be read as raw [queries x keys] booleans.
bool mask_fits(const at::Tensor& valid, int64_t queries, int64_t keys) {
  return !valid.defined() || (valid.is_cpu() && valid.is_contiguous() && valid.scalar_type() == at::kBool &&
                              valid.dim() == 2 && valid.size(0) == queries && valid.size(1) == keys);
}

// Self-attention without gradients: for each (image, head, block of rows), the
// block's logits, their softmax in place, and its rows of the output, so that
// alpha never leaves the cache unless it is asked for.
// At most 24 rows: with 50 keys a block's logits are at most 1200 outputs, which
// OpenBLAS runs on its small-matrix kernel instead of packing both operands (the
// same limit as cpu/linear's slices).
constexpr int64_t kRowsPerItem = 24;  // one image's 50 rows: three items per head

// The items split over `parts`. Training's forward runs it too, with probs the kept alpha.
template <typename T>
void self_attention_rows(const T* qkv, int64_t B, int64_t N, int64_t H, int64_t dh, T scale,
                         const bool* valid, T* probs, T* out, int parts) {
  const int64_t D = H * dh, ld = 3 * D, blocks = (N + kRowsPerItem - 1) / kRowsPerItem;
  const int64_t rows_per_block = (N + blocks - 1) / blocks;
  for_each_claimed(size_t(B * H * blocks), parts, 1, [&](size_t item, size_t, int) {
    const int64_t b = int64_t(item) / (H * blocks), h = int64_t(item) / blocks % H;
    const int64_t r0 = int64_t(item) % blocks * rows_per_block, rows = std::min(N, r0 + rows_per_block) - r0;
    if (rows <= 0) return;
    const T* q = qkv + b * N * ld + h * dh;
    thread_local std::vector<T> scratch;
    T* alpha;
    if (probs) {
      alpha = probs + ((b * H + h) * N + r0) * N;
    } else {
      scratch.resize(size_t(rows * N));
      alpha = scratch.data();
    }
    blas_gemm_strided<T>(false, true, rows, N, dh, q + r0 * ld, ld, q + D, ld, alpha, N);
    for (int64_t r = 0; r < rows; ++r)
      scaled_softmax_in_place(alpha + r * N, N, scale, valid ? valid + (r0 + r) * N : nullptr);
    blas_gemm_strided<T>(false, false, rows, dh, N, alpha, N, q + 2 * D, ld, out + (b * N + r0) * D + h * dh,
                         D);
  });
}

// Self-attention with gradients: forward as above, alpha kept (as the separate
// functions did); backward one (image, head) at a time, the items split over the
// cores as products below OpenBLAS's threading size allow (product_parts), dq,
// dk and dv written straight into one [B, N, 3D] gradient, where the separate
// functions ran their per-head products on one core and then concatenated the
// three (docs/performance.md).
template <typename T>
struct HeadAttention {
  const T* qkv;
  int64_t N, H, dh, D, ld;  // ld = 3D, the row stride of qkv
  T scale;
  const bool* valid;
  int parts;  // product_parts for one (image, head)'s products
  const T* q(int64_t b, int64_t h) const { return qkv + b * N * ld + h * dh; }
  const T* k(int64_t b, int64_t h) const { return q(b, h) + D; }
  const T* v(int64_t b, int64_t h) const { return q(b, h) + 2 * D; }
};

template <typename T>
void head_attention_backward(const HeadAttention<T>& a, int64_t B, const T* alpha, const T* g, T* dqkv) {
  const int64_t N = a.N, dh = a.dh, D = a.D, ld = a.ld, H = a.H;
  for_each_claimed(size_t(B * H), a.parts, 1, [&](size_t item, size_t, int) {
    const int64_t b = int64_t(item) / H, h = int64_t(item) % H;
    const T* al = alpha + (b * a.H + h) * N * N;
    const T* gh = g + b * N * D + h * dh;
    T* dq = dqkv + b * N * ld + h * dh;
    thread_local std::vector<T> scratch;
    scratch.resize(size_t(N * N));
    T* dl = scratch.data();
    blas_gemm_strided<T>(true, false, N, dh, N, al, N, gh, D, dq + 2 * D, ld);  // dV = A^T G
    blas_gemm_strided<T>(false, true, N, N, dh, gh, D, a.v(b, h), ld, dl, N);   // dA = G V^T
    for (int64_t r = 0; r < N; ++r) softmax_backward(al + r * N, dl + r * N, dl + r * N, N, a.scale);
    blas_gemm_strided<T>(false, false, N, dh, N, dl, N, a.k(b, h), ld, dq, ld);     // dQ = dL K
    blas_gemm_strided<T>(true, false, N, dh, N, dl, N, a.q(b, h), ld, dq + D, ld);  // dK = dL^T Q
  });
}

template <typename T>
HeadAttention<T> head_attention(const EngineOptions& engine, const at::Tensor& qkv, int64_t heads,
                                const at::Tensor& valid) {
  const int64_t N = qkv.size(1), D = qkv.size(2) / 3, dh = D / heads;
  return {qkv.data_ptr<T>(),
          N,
          heads,
          dh,
          D,
          3 * D,
          T(1.0 / std::sqrt(double(dh))),
          valid.numel() ? valid.data_ptr<bool>() : nullptr,
          product_parts(engine, N * N * dh)};
}

// The same arithmetic as LibTorch's differentiable ops, for create_graph.
at::Tensor attention_by_ops(const at::Tensor& qkv, int64_t heads, const at::Tensor& valid) {
  const int64_t B = qkv.size(0), N = qkv.size(1), D = qkv.size(2) / 3, dh = D / heads;
  const auto parts = qkv.chunk(3, -1);
  const auto split_heads = [&](const at::Tensor& t) { return t.reshape({B, N, heads, dh}).transpose(1, 2); };
  at::Tensor logits =
      at::matmul(split_heads(parts[0]), split_heads(parts[1]).transpose(-1, -2)) / std::sqrt(double(dh));
  if (valid.numel())
    logits = logits.masked_fill(valid.logical_not(), -std::numeric_limits<double>::infinity());
  return at::matmul(at::softmax(logits, -1), split_heads(parts[2])).transpose(1, 2).reshape({B, N, D});
}

class SelfAttentionCore : public torch::autograd::Function<SelfAttentionCore> {
 public:
  // Returns out [B, N, D] and alpha [B, H, N, N] (not differentiable: for the attention maps).
  static variable_list forward(AutogradContext* ctx, const at::Tensor& qkv, const at::Tensor& valid,
                               int64_t heads, const EngineOptions& engine) {
    keep_options(ctx, engine);
    const int64_t B = qkv.size(0), N = qkv.size(1), D = qkv.size(2) / 3;
    at::Tensor out = at::empty({B, N, D}, qkv.options()), alpha = at::empty({B, heads, N, N}, qkv.options());
    AT_DISPATCH_FLOATING_TYPES(qkv.scalar_type(), "self_attention_train", [&] {
      const HeadAttention<scalar_t> a = head_attention<scalar_t>(engine, qkv, heads, valid);
      self_attention_rows<scalar_t>(a.qkv, B, N, heads, a.dh, a.scale, a.valid, alpha.data_ptr<scalar_t>(),
                                    out.data_ptr<scalar_t>(), a.parts);
    });
    ctx->save_for_backward({qkv, valid, alpha});
    ctx->saved_data["heads"] = heads;
    ctx->mark_non_differentiable({alpha});
    return {out, alpha};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = ctx->get_saved_variables();
    const at::Tensor &qkv = s[0], &valid = s[1], &alpha = s[2];
    const int64_t heads = ctx->saved_data["heads"].toInt();
    if (at::GradMode::is_enabled())  // create_graph: a gradient that is differentiable itself
      return {torch::autograd::grad({attention_by_ops(qkv, heads, valid)}, {qkv}, {grads[0]}, true, true)[0],
              {},
              {},
              {}};
    const at::Tensor g = grads[0].contiguous();
    at::Tensor dqkv = at::empty_like(qkv);
    AT_DISPATCH_FLOATING_TYPES(qkv.scalar_type(), "self_attention_train_backward", [&] {
      head_attention_backward<scalar_t>(head_attention<scalar_t>(kept_options(ctx), qkv, heads, valid),
                                        qkv.size(0), alpha.data_ptr<scalar_t>(), g.data_ptr<scalar_t>(),
                                        dqkv.data_ptr<scalar_t>());
    });
    return {dqkv, {}, {}, {}};
  }
};

}  // namespace

at::Tensor head_logits(const EngineOptions& engine, const at::Tensor& q, const at::Tensor& k, int64_t heads) {
  return !engine.reference && raw_heads(q, k) ? HeadLogits::apply(q, k, heads) : at::Tensor();
}

at::Tensor head_values(const EngineOptions& engine, const at::Tensor& alpha, const at::Tensor& v,
                       int64_t heads) {
  return !engine.reference && raw_heads(alpha, v) ? HeadValues::apply(alpha, v, heads) : at::Tensor();
}

at::Tensor head_softmax(const EngineOptions& engine, const at::Tensor& logits, const at::Tensor& valid,
                        double divisor) {
  if (logits.dim() < 2 || logits.numel() == 0 || !mask_fits(valid, logits.size(-2), logits.size(-1)))
    return {};
  if (fused_inference_applies(engine, {&logits}))
    return softmax_rows(engine, logits, valid, 1.0 / divisor, 1);
  if (training_kernels_apply(engine, {&logits})) return trained_softmax(engine, logits, valid, 1.0 / divisor);
  return {};
}

at::Tensor head_up_projection(const EngineOptions& engine, const at::Tensor& s, const at::Tensor& up,
                              int64_t heads, int64_t head_dim) {
  if (!fused_inference_applies(engine, {&s, &up}) || !blas_gemm_usable(s) || !blas_gemm_usable(up)) return {};
  const int64_t B = s.size(0), N = s.size(1), c = s.size(3), H = heads, dh = head_dim;
  at::Tensor out = at::empty({B, N, H * dh}, s.options());
  AT_DISPATCH_FLOATING_TYPES(s.scalar_type(), "head_up_projection", [&] {
    const scalar_t *sp = s.data_ptr<scalar_t>(), *wp = up.data_ptr<scalar_t>();
    scalar_t* op = out.data_ptr<scalar_t>();
    for (int64_t h = 0; h < H; ++h)
      blas_gemm_strided<scalar_t>(false, false, B * N, dh, c, sp + h * c, H * c, wp + h * dh, H * dh,
                                  op + h * dh, H * dh);
  });
  return out;
}

at::Tensor fused_self_attention(const EngineOptions& engine, const at::Tensor& qkv, int64_t heads,
                                const at::Tensor& valid, at::Tensor* probs) {
  if (engine.reference) return {};
  const int64_t B = qkv.size(0), N = qkv.size(1), D = qkv.size(-1) / 3, dh = D / heads;
  // Raw memory: q, k and v must split into whole heads (views of a ragged qkv would throw instead).
  const bool raw = qkv.dim() == 3 && N > 0 && D > 0 && qkv.size(2) == 3 * heads * dh &&
                   mask_fits(valid, N, N) && blas_gemm_usable(qkv);
  if (raw && fused_inference_applies(engine, {&qkv})) {
    at::Tensor out = at::empty({B, N, D}, qkv.options());
    if (probs) *probs = at::empty({B, heads, N, N}, qkv.options());
    int parts = matrix_threads(engine);  // one image: split where the engine splits products
    if (parts == 0)
      parts = engine_splits_products() && B * heads * N * N * dh >= (int64_t(1) << 18) ? free_cores() : 1;
    AT_DISPATCH_FLOATING_TYPES(qkv.scalar_type(), "self_attention_core", [&] {
      self_attention_rows<scalar_t>(
          qkv.data_ptr<scalar_t>(), B, N, heads, dh, scalar_t(1.0 / std::sqrt(double(dh))),
          valid.defined() ? valid.data_ptr<bool>() : nullptr, probs ? probs->data_ptr<scalar_t>() : nullptr,
          out.data_ptr<scalar_t>(), parts);
    });
    return out;
  }
  if (raw && training_kernels_apply(engine, {&qkv})) {
    const at::Tensor mask = valid.defined() ? valid : at::empty({0}, qkv.options().dtype(at::kBool));
    const torch::autograd::variable_list outputs = SelfAttentionCore::apply(qkv, mask, heads, engine);
    if (probs) *probs = outputs[1];
    return outputs[0];
  }
  return {};
}

}  // namespace translution
