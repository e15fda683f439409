#pragma once
// x[index] along dim 0 ([R, ...] from [N, ...]). On CPU a row memcpy, because
// LibTorch's CPU index_select is slow for the engine's wide rows (B x C floats
// each); elsewhere index_select. Shared by the relative operators and the ATen
// fallbacks of their per-pair kernels, so both gather rows the same way.
#include <ATen/core/Tensor.h>

namespace translution {

at::Tensor gather_rows(const at::Tensor& x, const at::Tensor& index);

// Whether t and its index are plain CPU memory the one-pass copies below can read:
// contiguous float or double, and a contiguous int64 index.
bool plain_cpu(const at::Tensor& t, const at::Tensor& index);

// grid[b, h, i, j] = dots[r, b, h] where pair_of_row[r] = i N + j: [R, B, H] ->
// [B, H, M, N], contiguous, 0 where no row is. Undefined unless plain_cpu.
at::Tensor scatter_pairs(const at::Tensor& dots, const at::Tensor& pair_of_row, int64_t M, int64_t N);

// The reverse: rows[r, b, h] = grid[b, h, i, j] for the pair of row r, [R, B, H].
// Undefined unless plain_cpu.
at::Tensor gather_pairs(const at::Tensor& grid, const at::Tensor& pair_of_row);

}  // namespace translution
