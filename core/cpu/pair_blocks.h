#pragma once
// The relative operators' per-pair arithmetic done matrix by matrix (CPU).
//
// nn/pair_order.h sorts the pairs by offset matrix and projects each matrix's pair
// rows with one product. Done in separate passes, each projection writes [R, B, D]
// rows (LoR's at half a batch: 3.8 MB, more than a core's L2), the pair kernels
// read them back for dot products or weighted sums, backward writes their
// gradients as large again and the products' gradients read those. Here each
// matrix's block of rows (at most 49 pairs x the batch) is projected and its
// arithmetic done at once, while the block is in cache: only the rows backward
// needs are written out (`keep`), and backward keeps its row gradients in a
// per-core scratch block.
//
// Every function takes token-major inputs ([T, B, C]) and pair-sorted rows;
// pair_blocks_apply says where it runs (else the separate passes of nn/relative_logits and nn/relative_values
// do). Where the batch fills the vector lanes, each function hands its work to cpu/pair_lanes.h (LoR's narrow
// matrices), which keeps its rows in its own layout.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include <ATen/core/Tensor.h>

#include "cpu/bf16_weights.h"
#include "util/engine_options.h"

namespace translution {

// The pairs, sorted by matrix (nn/pair_order.h's PairOrder, as raw arrays).
struct PairTable {
  const std::vector<int64_t>* offset = nullptr;  // E + 1 prefix sums of rows per matrix
  const int64_t* pair = nullptr;                 // i N + j of each row
  const int64_t* query = nullptr;                // i
  const int64_t* source = nullptr;               // j
  int64_t queries = 0;                           // M
  int64_t tokens = 0;                            // N
  EngineOptions engine;                          // how the work splits over the cores
};

// One side of the arithmetic: relative (x_t W[entry] for the row's token t) or plain (the token's vector).
struct PairSide {
  at::Tensor xt;                  // [T, B, C]: the input; a plain side's vectors (C = D)
  at::Tensor bank;                // [E, C, D]; undefined or empty: plain
  const int64_t* rows = nullptr;  // the token of each sorted row (PairTable's query or source)
  bool bf16 = false;              // products in bfloat16 (cpu/bf16_gemm.h)
  const Bf16Bits* w16 = nullptr;  // a bfloat16 copy of the bank to read instead (no gradients)
  at::Tensor saved;               // [R, B, D] rows kept by forward for backward; undefined: recomputed
  bool relative() const { return bank.defined() && bank.numel() > 0; }
  int64_t width() const { return relative() ? bank.size(2) : xt.size(2); }  // D
};

// Views of an order's index tensors (int64, CPU, contiguous), which outlive them.
PairTable pair_table(const EngineOptions& engine, const std::vector<int64_t>& offset,
                     const at::Tensor& pair_of_row, const at::Tensor& query_of_row,
                     const at::Tensor& source_of_row, int64_t queries, int64_t tokens);
// bank undefined: a plain side; rows: the token of each sorted row.
PairSide make_pair_side(const at::Tensor& xt, const at::Tensor& bank, const at::Tensor& rows, bool bf16,
                        const Bf16Bits* w16, const at::Tensor& saved);

// One core's share of the sides' matrix products (with bf16 sides, the tiles' parts).
int block_parts(const PairTable& table, std::initializer_list<const PairSide*> sides);

// Per-part scratch, `values` elements of `element` bytes for each part, kept by
// the calling thread between calls (the blocks run in every layer, forward and
// backward; allocated afresh per call, the buffers would raise the training
// peak). One buffer per thread for this file and
// cpu/pair_lanes.h; no call nests another on the same thread.
struct Scratch {
  Scratch(int parts, int64_t values, size_t element) : values(values) {
    thread_local std::vector<char> buffer;
    const size_t bytes = size_t(parts) * size_t(values) * element + 64;
    if (buffer.size() < bytes) {
      buffer.clear();
      buffer.shrink_to_fit();
      buffer.resize(bytes);
    }
    base = buffer.data() + (64 - reinterpret_cast<uintptr_t>(buffer.data()) % 64) % 64;  // cache-line aligned
  }
  template <typename T>
  T* part(int p) const {
    return reinterpret_cast<T*>(base) + p * values;
  }
  char* base;
  int64_t values;
};

// CPU, one floating type, contiguous, products straight to the BLAS or the
// engine's kernels, not the reference options, nor the all-token projection.
bool pair_blocks_apply(const EngineOptions& engine, std::initializer_list<const at::Tensor*> tensors);

// A [B, H, M, N] grid as pair-ordered planes [B H, R] (value of row r at [bh, r]),
// and back (0 at pairs without a row).
at::Tensor grid_to_planes(const PairTable& table, const at::Tensor& grid);
at::Tensor planes_to_grid(const PairTable& table, const at::Tensor& planes, int64_t batch, int64_t heads);

// logits [B, H, M, N] (0 at pairs without a row); keep: each relative side's rows
// are written to its `saved`.
at::Tensor blocked_logits(const PairTable& table, PairSide& q, PairSide& k, int64_t heads, bool keep);

// Given the logits' gradient: {dL/dq.xt, dL/dq.bank, dL/dk.xt, dL/dk.bank} (banks' undefined for plain
// sides).
std::array<at::Tensor, 4> blocked_logits_backward(const PairTable& table, const PairSide& q,
                                                  const PairSide& k, const at::Tensor& grad);

// out[i, b, h] = sum_j alpha[b, h, i, j] v_ij: [M, B, H, D / H] (head_sliced: head h
// weighs its slice of v) or [M, B, H, D] (every head weighs all of v). keep: v's
// rows are written to its `saved`. alpha_planes, unless null, receives alpha's
// pair-ordered planes ([B H, R]) for backward (no second copy of the grid there).
at::Tensor blocked_values(const PairTable& table, const at::Tensor& alpha, PairSide& v, bool head_sliced,
                          bool keep, at::Tensor* alpha_planes);

// Given out's gradient ([M, B, H, *]) and forward's alpha planes: {dL/dalpha [B, H, M, N],
// dL/dv.xt, dL/dv.bank}.
std::array<at::Tensor, 3> blocked_values_backward(const PairTable& table, const at::Tensor& alpha_planes,
                                                  const PairSide& v, const at::Tensor& dout,
                                                  bool head_sliced);

}  // namespace translution
