#pragma once
// The elementwise half of the relative operators, on pair-sorted rows.
//
// nn/pair_order.h sorts the visible pairs (i, j) by offset matrix and projects
// them into rows [R, B, D] (D = heads x width). What remains per pair is cheap
// arithmetic over those rows: dot products for logits, alpha-weighted sums of
// values into their query's output, and the gradients of both. Written as ATen
// expressions each is several passes over [R, B, D] memory plus a temporary as
// large as the rows; on CPU these kernels do each in one pass, reading the
// query's gradient in place instead of gathering it (docs/performance.md has
// the measurements). Elsewhere, or when switched off, the ATen expressions run
// (tests prove both exact).
#include <string>
#include <utility>

#include <ATen/core/Tensor.h>

#include "util/engine_options.h"

namespace translution {

// Where the per-pair arithmetic runs on the CPU, the first that applies: with the
// batch across the vector lanes where it fills them (float, AVX-512, batches of 16
// images, LoR's narrow matrices: cpu/pair_lanes.h); inside each offset matrix's
// block of rows, right after its product, while the rows are in cache
// (cpu/pair_blocks.h); the kernels below, one pass each over all rows; under
// the reference options, the ATen expressions everywhere.

// dots[r, b, h] = sq[r, b, h, :] . sk[r, b, h, :]  (sq, sk: [R, B, D], D = heads x width).
at::Tensor pair_dots(const EngineOptions& engine, const at::Tensor& sq, const at::Tensor& sk, int64_t heads);

// Gradients of pair_dots given g = dL/d dots [R, B, H]: {sk g, sq g} per head.
// in_place: the caller's sq and sk are scratch, scaled in place and returned as
// {sk, sq} (recomputed rows: two [R, B, D] tensors less at the peak).
std::pair<at::Tensor, at::Tensor> pair_dots_backward(const EngineOptions& engine, at::Tensor sq,
                                                     at::Tensor sk, const at::Tensor& g,
                                                     bool in_place = false);

// out[query(r), b, h] += a[r, b, h] v(r, b, h) over all rows r, with tokens outputs.
// head_sliced: v(r, b, h) is head h's slice of v [R, B, D] -> out [N, B, H, D / H];
// otherwise every head weighs the whole row                 -> out [N, B, H, D].
at::Tensor scatter_weighted(const EngineOptions& engine, const at::Tensor& a, const at::Tensor& v,
                            const at::Tensor& query_of_row, int64_t tokens, bool head_sliced);

// Gradients of scatter_weighted given dout (its output's gradient): {da [R, B, H], dv [R, B, D]}.
// in_place: v is scratch and dv is written over it (on the fused path).
std::pair<at::Tensor, at::Tensor> scatter_weighted_backward(const EngineOptions& engine,
                                                            const at::Tensor& dout, const at::Tensor& a,
                                                            at::Tensor v, const at::Tensor& query_of_row,
                                                            bool head_sliced, bool in_place = false);

}  // namespace translution
