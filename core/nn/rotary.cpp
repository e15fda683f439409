#include "nn/rotary.h"

#include <cmath>
#include <vector>

#include <ATen/ATen.h>

#include "nn/attention.h"
#include "util/error.h"

namespace translution {

at::Tensor RotaryPositions::angles(const TokenLayout& layout, int64_t head_dim) {
  const int64_t N = layout.tokens(), pairs = head_dim / 2, first = layout.cls ? 1 : 0;
  const bool two_d = layout.kind == TokenLayout::Kind::Grid2D;
  const int64_t per_axis = two_d ? pairs / 2 : pairs;
  std::vector<double> a(size_t(N * pairs), 0.0);  // token t's pair k at t pairs + k
  for (int64_t t = first; t < N; ++t) {
    const int64_t p = t - first, x = p % layout.width, y = p / layout.width;
    for (int64_t k = 0; k < pairs; ++k) {
      const int64_t axis_k = k % per_axis;
      const double theta = std::pow(10000.0, -double(axis_k) / double(per_axis));
      a[size_t(t * pairs + k)] = double(two_d && k >= per_axis ? y : x) * theta;
    }
  }
  // double: converted to the input's dtype on use, so double runs stay exact
  return at::tensor(a, at::kDouble).view({N, pairs});
}

RotaryPositions::RotaryPositions(const TokenLayout& layout, int64_t head_dim) {
  const int64_t quantum = layout.kind == TokenLayout::Kind::Grid2D ? 4 : 2;
  if (head_dim % quantum != 0)
    throw Error("rotary embedding: head dim " + std::to_string(head_dim) + " must be a multiple of " +
                std::to_string(quantum) + " (dimension pairs" +
                (quantum == 4 ? ", half for x and half for y)" : ")"));
  const at::Tensor a = angles(layout, head_dim);
  cos_ = a.cos();
  sin_ = a.sin();
}

at::Tensor RotaryPositions::rotate(const at::Tensor& x, int64_t heads) {
  const int64_t B = x.size(0), N = x.size(1), dh = x.size(2) / heads;
  const at::Tensor pairs = x.reshape({B, N, heads, dh / 2, 2});
  const at::Tensor a = pairs.select(-1, 0), b = pairs.select(-1, 1);
  const at::Tensor c = converted_like(cos_, cos_like_, x).narrow(0, 0, N).view({1, N, 1, dh / 2});
  const at::Tensor s = converted_like(sin_, sin_like_, x).narrow(0, 0, N).view({1, N, 1, dh / 2});
  return at::stack({a * c - b * s, a * s + b * c}, -1).view({B, N, heads * dh});
}

}  // namespace translution
