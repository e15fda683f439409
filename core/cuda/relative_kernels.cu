#include <cuda_runtime.h>

#include "cuda/relative_kernels.h"

namespace translution::cuda_kernels {
namespace {

constexpr int kThreads = 256;

int64_t blocks_for(int64_t items) { return (items + kThreads - 1) / kThreads; }

__global__ void relative_logits_kernel(RelativeShape s, const float* xq, const float* wq, const float* xk,
                                       const float* wk, const int64_t* entry_of, float* logits) {
  const int64_t index = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= s.batch * s.heads * s.queries * s.tokens) return;
  const LogitCoordinates c = logit_coordinates(s, index);
  logits[index] = relative_logit(s, xq, wq, xk, wk, entry_of, c.b, c.h, c.i, c.j);
}

__global__ void relative_values_kernel(RelativeShape s, const float* alpha, const float* xv, const float* wv,
                                       const int64_t* entry_of, float* out) {
  const int64_t index = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= s.batch * s.queries * s.width()) return;
  const int64_t col = index % s.width(), i = (index / s.width()) % s.queries,
                b = index / (s.width() * s.queries);
  out[index] = relative_value(s, alpha, xv, wv, entry_of, b, i, col);
}

// Element index of [B, N, C] rows: image, token, column.
struct RowElement {
  int64_t b, t, c;
};
__device__ RowElement row_element(const RelativeShape& s, int64_t index) {
  return {index / (s.tokens * s.dim), (index / s.dim) % s.tokens, index % s.dim};
}

__global__ void logit_inputs_kernel(RelativeShape s, const float* dlogits, const float* xq, const float* wq,
                                    const float* xk, const float* wk, const int64_t* entry_of, float* dxq,
                                    float* dxk) {
  const int64_t index = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= s.batch * s.tokens * s.dim) return;
  const RowElement r = row_element(s, index);
  dxq[index] =
      r.t < s.queries ? logit_grad_query_input(s, dlogits, wq, xk, wk, entry_of, r.b, r.t, r.c) : 0.0f;
  dxk[index] = logit_grad_key_input(s, dlogits, xq, wq, wk, entry_of, r.b, r.t, r.c);
}

__global__ void logit_banks_kernel(RelativeShape s, int64_t entries, const float* dlogits, const float* xq,
                                   const float* wq, const float* xk, const float* wk, const int64_t* entry_of,
                                   float* dwq, float* dwk) {
  const int64_t index = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= entries * s.dim * s.width()) return;
  const int64_t d = index % s.width(), c = (index / s.width()) % s.dim, e = index / (s.width() * s.dim);
  dwq[index] = logit_grad_bank(s, dlogits, xq, wq, xk, wk, entry_of, true, e, c, d);
  dwk[index] = logit_grad_bank(s, dlogits, xq, wq, xk, wk, entry_of, false, e, c, d);
}

__global__ void value_alpha_kernel(RelativeShape s, const float* dout, const float* xv, const float* wv,
                                   const int64_t* entry_of, float* dalpha) {
  const int64_t index = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= s.batch * s.heads * s.queries * s.tokens) return;
  const LogitCoordinates c = logit_coordinates(s, index);
  dalpha[index] = value_grad_alpha(s, dout, xv, wv, entry_of, c.b, c.h, c.i, c.j);
}

__global__ void value_input_kernel(RelativeShape s, const float* alpha, const float* dout, const float* wv,
                                   const int64_t* entry_of, float* dxv) {
  const int64_t index = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= s.batch * s.tokens * s.dim) return;
  const RowElement r = row_element(s, index);
  dxv[index] = value_grad_input(s, alpha, dout, wv, entry_of, r.b, r.t, r.c);
}

__global__ void value_bank_kernel(RelativeShape s, int64_t entries, const float* alpha, const float* dout,
                                  const float* xv, const int64_t* entry_of, float* dwv) {
  const int64_t index = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= entries * s.dim * s.width()) return;
  const int64_t d = index % s.width(), c = (index / s.width()) % s.dim, e = index / (s.width() * s.dim);
  dwv[index] = value_grad_bank(s, alpha, dout, xv, entry_of, e, c, d);
}

unsigned grid_for(int64_t items) { return unsigned(blocks_for(items)); }

}  // namespace

void launch_relative_logits(const RelativeShape& s, const float* xq, const float* wq, const float* xk,
                            const float* wk, const int64_t* entry_of, float* logits, CUstream_st* stream) {
  const int64_t items = s.batch * s.heads * s.queries * s.tokens;
  if (items == 0) return;
  relative_logits_kernel<<<unsigned(blocks_for(items)), kThreads, 0, stream>>>(s, xq, wq, xk, wk, entry_of,
                                                                               logits);
}

void launch_relative_values(const RelativeShape& s, const float* alpha, const float* xv, const float* wv,
                            const int64_t* entry_of, float* out, CUstream_st* stream) {
  const int64_t items = s.batch * s.queries * s.width();
  if (items == 0) return;
  relative_values_kernel<<<unsigned(blocks_for(items)), kThreads, 0, stream>>>(s, alpha, xv, wv, entry_of,
                                                                               out);
}

void launch_relative_logits_backward(const RelativeShape& s, int64_t entries, const float* dlogits,
                                     const float* xq, const float* wq, const float* xk, const float* wk,
                                     const int64_t* entry_of, float* dxq, float* dwq, float* dxk, float* dwk,
                                     CUstream_st* stream) {
  if (const int64_t rows = s.batch * s.tokens * s.dim; rows > 0)
    logit_inputs_kernel<<<grid_for(rows), kThreads, 0, stream>>>(s, dlogits, xq, wq, xk, wk, entry_of, dxq,
                                                                 dxk);
  if (const int64_t bank = entries * s.dim * s.width(); bank > 0)
    logit_banks_kernel<<<grid_for(bank), kThreads, 0, stream>>>(s, entries, dlogits, xq, wq, xk, wk, entry_of,
                                                                dwq, dwk);
}

void launch_relative_values_backward(const RelativeShape& s, int64_t entries, const float* dout,
                                     const float* alpha, const float* xv, const float* wv,
                                     const int64_t* entry_of, float* dalpha, float* dxv, float* dwv,
                                     CUstream_st* stream) {
  if (const int64_t weights = s.batch * s.heads * s.queries * s.tokens; weights > 0)
    value_alpha_kernel<<<grid_for(weights), kThreads, 0, stream>>>(s, dout, xv, wv, entry_of, dalpha);
  if (const int64_t rows = s.batch * s.tokens * s.dim; rows > 0)
    value_input_kernel<<<grid_for(rows), kThreads, 0, stream>>>(s, alpha, dout, wv, entry_of, dxv);
  if (const int64_t bank = entries * s.dim * s.width(); bank > 0)
    value_bank_kernel<<<grid_for(bank), kThreads, 0, stream>>>(s, entries, alpha, dout, xv, entry_of, dwv);
}

}  // namespace translution::cuda_kernels
