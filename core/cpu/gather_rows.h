#pragma once
// x[index] along dim 0 ([R, ...] from [N, ...]). On CPU a row memcpy, because
// LibTorch 1.13's index_select is slow for the engine's wide rows (B x C floats
// each); elsewhere index_select. Shared by the relative operators and the ATen
// fallbacks of their per-pair kernels, so the fallbacks stay the old path.
#include <ATen/core/Tensor.h>

namespace translution {

at::Tensor gather_rows(const at::Tensor& x, const at::Tensor& index);

}  // namespace translution
