#include "cpu/gather_rows.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include <ATen/ATen.h>
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
    for (int64_t r = begin; r < end; ++r) std::memcpy(dst + r * row_bytes, src + idx[r] * row_bytes, size_t(row_bytes));
  });
  return out;
}

}  // namespace translution
