#pragma once
// The per-matrix products of pair-sorted rows (nn/pair_order.h, nn/relative_projection.h): each offset
// matrix multiplies the rows of the pairs that use it. Gathering a matrix's input
// rows into a cache-sized block, choosing the kernel that runs its product and
// gradients (cpu/bf16_gemm in bf16 precision, the engine's row kernels, the BLAS),
// and splitting the matrices over the cores.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include <ATen/core/Tensor.h>

#include "cpu/bf16_gemm.h"
#include "cpu/bf16_weights.h"
#include "cpu/helper_threads.h"

namespace translution {

// The most rows any one matrix has (offset: E + 1 prefix sums).
int64_t most_rows(const std::vector<int64_t>& offset);

// Parts to split E independent products of at most `largest_gemm_rows` x k x n over.
int matrix_parts(const EngineOptions& engine, int64_t largest_gemm_rows, int64_t k, int64_t n);

// body(first, last, part) over `parts` ranges of matrices with about equal rows,
// part 0 on the calling thread and the others on the helper threads.
template <typename F>
void for_matrix_parts(const std::vector<int64_t>& offset, int parts, F&& body) {
  const size_t E = offset.size() - 1;
  if (parts <= 1) return body(size_t(0), E, 0);
  std::vector<size_t> cut{0};
  for (int p = 1; p < parts; ++p) {
    const int64_t target = offset.back() * p / parts;
    cut.push_back(size_t(std::lower_bound(offset.begin(), offset.end() - 1, target) - offset.begin()));
  }
  cut.push_back(E);
  run_parts(parts, [&](int p) { body(cut[size_t(p)], cut[size_t(p) + 1], p); });
}

// Copies the input rows of sorted rows [begin, end) (row_size values each) into dst.
template <typename T>
void gather_block(const T* x, const int64_t* rows, int64_t begin, int64_t end, int64_t row_size, T* dst) {
  for (int64_t r = begin; r < end; ++r)
    std::memcpy(dst + (r - begin) * row_size, x + rows[r] * row_size, sizeof(T) * size_t(row_size));
}

// The reverse, adding: x[rows[r]] += src[r - begin] for sorted rows [begin, end).
template <typename T>
void scatter_add_block(const T* src, const int64_t* rows, int64_t begin, int64_t end, int64_t row_size,
                       T* x) {
  for (int64_t r = begin; r < end; ++r) {
    T* dst = x + rows[r] * row_size;
    const T* s = src + (r - begin) * row_size;
    for (int64_t t = 0; t < row_size; ++t) dst[t] += s[t];
  }
}

// A bank's gradient to be written matrix by matrix: zeros only in the matrices no row uses.
at::Tensor bank_gradient_buffer(const at::Tensor& bank, const std::vector<int64_t>& offset);

// Whether a bank's products run in bfloat16 (cpu/bf16_gemm.h) when training in bf16 precision.
bool bf16_bank(const at::Tensor& bank);

// out[m x D] = g[m x C] w[C x D]; `next` is the matrix the caller multiplies next
// (streamed into cache meanwhile) or null. bf16: on cpu/bf16_gemm, one part, on the
// tiles as it says (null: fp32). w16: read this
// bfloat16 copy of w instead (forwards without gradients).
template <typename T>
void matrix_product(int64_t m, int64_t C, int64_t D, const T* g, const T* w, T* out, const T* next,
                    const Bf16Run* bf16, const Bf16Bits* w16 = nullptr, const Bf16Bits* next16 = nullptr);

// dW = G^T dS (overwritten) and dG = dS W^T for one matrix's rows ([m x C] and [m x D]).
template <typename T>
void matrix_gradients(int64_t m, int64_t C, int64_t D, const T* g, const T* ds, const T* w, T* dw, T* dg,
                      const Bf16Run* bf16);

}  // namespace translution
