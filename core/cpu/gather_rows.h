#pragma once
// x[index] along dim 0 ([R, ...] from [N, ...]). On CPU a row memcpy, because
// LibTorch's CPU index_select is slow for the engine's wide rows (B x C floats
// each); elsewhere index_select. Shared by the relative operators and the ATen
// fallbacks of their per-pair kernels, so both gather rows the same way.
#include <ATen/core/Tensor.h>

namespace translution {

at::Tensor gather_rows(const at::Tensor& x, const at::Tensor& index);

}  // namespace translution
