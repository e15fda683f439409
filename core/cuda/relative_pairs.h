#pragma once
// The arithmetic of one relative logit and one relative value element, as the
// fused CUDA kernels (relative_kernels.cu) compute them and as a CPU test checks
// them against the per-pair reference: plain pointers, no LibTorch, each function
// __host__ __device__ under nvcc. The offset matrices are read in place from the
// [E, C, D] banks and no [B, N, N, D] tensor of projected pairs exists: a thread
// projects the two rows its pair needs, column by column.
//
// Layouts (row-major): inputs x [B, N, C]; banks W [E, C, D] with D = heads x
// head_dim; entry_of [M, N], the bank entry of pair (i, j), or -1 where the pair
// is not visible (a causal mask); logits and attention [B, H, M, N]; values out
// [B, M, D]. Pair (i, j) reads entry e = entry_of[i N + j] of each bank (the key
// bank is stored mirrored: nn/token_layout.h).
#include <cstdint>

#if defined(__CUDACC__)
#define TRANSLUTION_HOST_DEVICE __host__ __device__
#else
#define TRANSLUTION_HOST_DEVICE
#endif

namespace translution::cuda_kernels {

struct RelativeShape {
  int64_t batch = 0;     // B
  int64_t tokens = 0;    // N: keys and values
  int64_t queries = 0;   // M <= N: the first M tokens' outputs
  int64_t dim = 0;       // C: input width
  int64_t heads = 0;     // H
  int64_t head_dim = 0;  // D / H
  TRANSLUTION_HOST_DEVICE int64_t width() const { return heads * head_dim; }
};

// Position of logit (b, h, i, j) in [B, H, M, N], and its coordinates back.
TRANSLUTION_HOST_DEVICE inline int64_t logit_index(const RelativeShape& s, int64_t b, int64_t h, int64_t i,
                                                   int64_t j) {
  return ((b * s.heads + h) * s.queries + i) * s.tokens + j;
}

struct LogitCoordinates {
  int64_t b, h, i, j;
};

TRANSLUTION_HOST_DEVICE inline LogitCoordinates logit_coordinates(const RelativeShape& s, int64_t index) {
  LogitCoordinates c{};
  c.j = index % s.tokens;
  index /= s.tokens;
  c.i = index % s.queries;
  index /= s.queries;
  c.h = index % s.heads;
  c.b = index / s.heads;
  return c;
}

// Column `col` of token t's row of image b projected by matrix e: (x_t W[e])_col.
template <typename T>
TRANSLUTION_HOST_DEVICE inline T projected(const RelativeShape& s, const T* x, const T* bank, int64_t b,
                                           int64_t t, int64_t e, int64_t col) {
  const T* row = x + (b * s.tokens + t) * s.dim;
  const T* matrix = bank + e * s.dim * s.width();
  T sum = 0;
  for (int64_t c = 0; c < s.dim; ++c) sum += row[c] * matrix[c * s.width() + col];
  return sum;
}

// a_ij for head h of image b: q_ij . k_ji over the head's columns, q_ij = x_i Wq[e],
// k_ji = x_j Wk[e]; 0 for a pair that is not visible (the softmax masks it).
template <typename T>
TRANSLUTION_HOST_DEVICE inline T relative_logit(const RelativeShape& s, const T* xq, const T* wq, const T* xk,
                                                const T* wk, const int64_t* entry_of, int64_t b, int64_t h,
                                                int64_t i, int64_t j) {
  const int64_t e = entry_of[i * s.tokens + j];
  if (e < 0) return T(0);
  T sum = 0;
  for (int64_t d = h * s.head_dim; d < (h + 1) * s.head_dim; ++d)
    sum += projected(s, xq, wq, b, i, e, d) * projected(s, xk, wk, b, j, e, d);
  return sum;
}

// Column `col` (head col / head_dim) of query i's output: sum_j alpha_ij (x_j Wv[e_ij])_col.
template <typename T>
TRANSLUTION_HOST_DEVICE inline T relative_value(const RelativeShape& s, const T* alpha, const T* xv,
                                                const T* wv, const int64_t* entry_of, int64_t b, int64_t i,
                                                int64_t col) {
  const int64_t h = col / s.head_dim;
  T sum = 0;
  for (int64_t j = 0; j < s.tokens; ++j) {
    const int64_t e = entry_of[i * s.tokens + j];
    if (e >= 0) sum += alpha[logit_index(s, b, h, i, j)] * projected(s, xv, wv, b, j, e, col);
  }
  return sum;
}

// Backward, element by element. dlogits and dout are the loss's gradients of the
// logits [B, H, M, N] and the values [B, M, D]; each function gives one element of
// one input's gradient, summing over the pairs that element meets (a bank element:
// every pair of its entry, in every image).

// The q-projection's input, image b, token i < M, column c: sum_j sum_d da_ij k_ji[d] Wq[e_ij][c][d].
template <typename T>
TRANSLUTION_HOST_DEVICE inline T logit_grad_query_input(const RelativeShape& s, const T* dlogits, const T* wq,
                                                        const T* xk, const T* wk, const int64_t* entry_of,
                                                        int64_t b, int64_t i, int64_t c) {
  T sum = 0;
  for (int64_t j = 0; j < s.tokens; ++j) {
    const int64_t e = entry_of[i * s.tokens + j];
    if (e < 0) continue;
    for (int64_t d = 0; d < s.width(); ++d)
      sum += dlogits[logit_index(s, b, d / s.head_dim, i, j)] * projected(s, xk, wk, b, j, e, d) *
             wq[(e * s.dim + c) * s.width() + d];
  }
  return sum;
}

// The k-projection's input, image b, token j, column c: sum_{i<M} sum_d da_ij q_ij[d] Wk[e_ij][c][d].
template <typename T>
TRANSLUTION_HOST_DEVICE inline T logit_grad_key_input(const RelativeShape& s, const T* dlogits, const T* xq,
                                                      const T* wq, const T* wk, const int64_t* entry_of,
                                                      int64_t b, int64_t j, int64_t c) {
  T sum = 0;
  for (int64_t i = 0; i < s.queries; ++i) {
    const int64_t e = entry_of[i * s.tokens + j];
    if (e < 0) continue;
    for (int64_t d = 0; d < s.width(); ++d)
      sum += dlogits[logit_index(s, b, d / s.head_dim, i, j)] * projected(s, xq, wq, b, i, e, d) *
             wk[(e * s.dim + c) * s.width() + d];
  }
  return sum;
}

// Element (e, c, d) of a logit bank's gradient: sum over images and pairs of entry e of
// da_ij x[c] times the other side's projected row, d: the query bank (x the query's
// input x_i, other k_ji) or, with query_side false, the key bank (x_j and q_ij).
template <typename T>
TRANSLUTION_HOST_DEVICE inline T logit_grad_bank(const RelativeShape& s, const T* dlogits, const T* xq,
                                                 const T* wq, const T* xk, const T* wk,
                                                 const int64_t* entry_of, bool query_side, int64_t e,
                                                 int64_t c, int64_t d) {
  T sum = 0;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t i = 0; i < s.queries; ++i)
      for (int64_t j = 0; j < s.tokens; ++j) {
        if (entry_of[i * s.tokens + j] != e) continue;
        const T da = dlogits[logit_index(s, b, d / s.head_dim, i, j)];
        sum += query_side ? da * xq[(b * s.tokens + i) * s.dim + c] * projected(s, xk, wk, b, j, e, d)
                          : da * xk[(b * s.tokens + j) * s.dim + c] * projected(s, xq, wq, b, i, e, d);
      }
  return sum;
}

// The attention weight's gradient (b, h, i, j): sum over the head's columns of dout_i[d] v_ij[d].
template <typename T>
TRANSLUTION_HOST_DEVICE inline T value_grad_alpha(const RelativeShape& s, const T* dout, const T* xv,
                                                  const T* wv, const int64_t* entry_of, int64_t b, int64_t h,
                                                  int64_t i, int64_t j) {
  const int64_t e = entry_of[i * s.tokens + j];
  if (e < 0) return T(0);
  T sum = 0;
  for (int64_t d = h * s.head_dim; d < (h + 1) * s.head_dim; ++d)
    sum += dout[(b * s.queries + i) * s.width() + d] * projected(s, xv, wv, b, j, e, d);
  return sum;
}

// The values' input, image b, token j, column c: sum_{i<M} sum_d alpha_ij dout_i[d] Wv[e_ij][c][d].
template <typename T>
TRANSLUTION_HOST_DEVICE inline T value_grad_input(const RelativeShape& s, const T* alpha, const T* dout,
                                                  const T* wv, const int64_t* entry_of, int64_t b, int64_t j,
                                                  int64_t c) {
  T sum = 0;
  for (int64_t i = 0; i < s.queries; ++i) {
    const int64_t e = entry_of[i * s.tokens + j];
    if (e < 0) continue;
    for (int64_t d = 0; d < s.width(); ++d)
      sum += alpha[logit_index(s, b, d / s.head_dim, i, j)] * dout[(b * s.queries + i) * s.width() + d] *
             wv[(e * s.dim + c) * s.width() + d];
  }
  return sum;
}

// Element (e, c, d) of the value bank's gradient: sum over images and pairs of entry e
// of alpha_ij dout_i[d] x_j[c].
template <typename T>
TRANSLUTION_HOST_DEVICE inline T value_grad_bank(const RelativeShape& s, const T* alpha, const T* dout,
                                                 const T* xv, const int64_t* entry_of, int64_t e, int64_t c,
                                                 int64_t d) {
  T sum = 0;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t i = 0; i < s.queries; ++i)
      for (int64_t j = 0; j < s.tokens; ++j)
        if (entry_of[i * s.tokens + j] == e)
          sum += alpha[logit_index(s, b, d / s.head_dim, i, j)] * dout[(b * s.queries + i) * s.width() + d] *
                 xv[(b * s.tokens + j) * s.dim + c];
  return sum;
}

}  // namespace translution::cuda_kernels
