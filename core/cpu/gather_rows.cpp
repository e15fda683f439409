#include "cpu/gather_rows.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

namespace translution {

at::Tensor gather_rows(const at::Tensor& x_in, const at::Tensor& index) {
  const at::Tensor x = x_in.contiguous();
  std::vector<int64_t> sizes = x.sizes().vec();
  sizes[0] = index.size(0);
  if (!x.is_cpu()) return x.index_select(0, index);
  at::Tensor out = at::empty(sizes, x.options());
  const int64_t row_bytes = x.numel() / std::max<int64_t>(1, x.size(0)) * int64_t(x.element_size());
  const auto* src = static_cast<const char*>(x.data_ptr());
  auto* dst = static_cast<char*>(out.data_ptr());
  const int64_t* idx = index.data_ptr<int64_t>();
  at::parallel_for(0, index.size(0), 64, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      std::memcpy(dst + r * row_bytes, src + idx[r] * row_bytes, size_t(row_bytes));
  });
  return out;
}

bool plain_cpu(const at::Tensor& t, const at::Tensor& index) {
  return t.is_cpu() && t.is_contiguous() &&
         (t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble) && index.is_cpu() &&
         index.is_contiguous() && index.scalar_type() == at::kLong;
}

at::Tensor scatter_pairs(const at::Tensor& dots, const at::Tensor& pair_of_row, int64_t M, int64_t N) {
  if (!plain_cpu(dots, pair_of_row)) return {};
  const int64_t R = dots.size(0), B = dots.size(1), H = dots.size(2);
  at::Tensor grid =
      R == M * N ? at::empty({B, H, M, N}, dots.options()) : at::zeros({B, H, M, N}, dots.options());
  const int64_t* pair = pair_of_row.data_ptr<int64_t>();
  AT_DISPATCH_FLOATING_TYPES(dots.scalar_type(), "scatter_pairs", [&] {
    const scalar_t* d = dots.data_ptr<scalar_t>();
    scalar_t* g = grid.data_ptr<scalar_t>();
    for (int64_t r = 0; r < R; ++r)
      for (int64_t bh = 0; bh < B * H; ++bh) g[bh * M * N + pair[r]] = d[r * B * H + bh];
  });
  return grid;
}

at::Tensor gather_pairs(const at::Tensor& grid, const at::Tensor& pair_of_row) {
  if (!plain_cpu(grid, pair_of_row)) return {};
  const int64_t B = grid.size(0), H = grid.size(1), M = grid.size(2), N = grid.size(3),
                R = pair_of_row.size(0);
  at::Tensor rows = at::empty({R, B, H}, grid.options());
  const int64_t* pair = pair_of_row.data_ptr<int64_t>();
  AT_DISPATCH_FLOATING_TYPES(grid.scalar_type(), "gather_pairs", [&] {
    const scalar_t* a = grid.data_ptr<scalar_t>();
    scalar_t* o = rows.data_ptr<scalar_t>();
    for (int64_t r = 0; r < R; ++r)
      for (int64_t bh = 0; bh < B * H; ++bh) o[r * B * H + bh] = a[bh * M * N + pair[r]];
  });
  return rows;
}

}  // namespace translution
