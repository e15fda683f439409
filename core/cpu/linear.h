#pragma once
// A linear layer whose products, where OpenBLAS threads no GEMM, are split over
// the cores by the engine: the output's columns forward; the input gradient's
// columns and the weight gradient's rows backward. OpenBLAS gains little or
// nothing from its own second thread on one image's product (it packs the whole
// weight matrix per call), while the columns split in two on a helper thread take
// much less time (docs/performance.md, "Threads on two cores"). Where it does not
// split (small products, one core's share of a split training step, OpenBLAS
// threading each GEMM) a product that records gradients on contiguous CPU
// memory is still the engine's node in one part, and
// a forward without gradients calls the BLAS directly (cpu/inference_passes.h), or
// for one image's float products (at most 64 rows) the engine's row kernel on a
// transposed copy of the weight (cpu/transposed_weights.h); which of the two
// computes a column depends on where the column split falls, so such outputs may
// differ in their last bits between thread counts. Elsewhere (CUDA, strided
// inputs, the reference options) it is the module's own forward. The BLAS adds its
// product onto outputs that already hold the bias (and linear_add's residual).
#include <vector>

#include <torch/nn/modules/linear.h>

#include "util/engine_options.h"

namespace translution {

at::Tensor linear(const EngineOptions& engine, torch::nn::Linear& layer, const at::Tensor& x);
// gelu(layer(x)) and residual + layer(x). Without gradients (cpu/inference_passes.h)
// each part applies them to its own columns right after its product; otherwise
// they are LibTorch's ops on the layer's output.
at::Tensor linear_gelu(const EngineOptions& engine, torch::nn::Linear& layer, const at::Tensor& x);
at::Tensor linear_add(const EngineOptions& engine, torch::nn::Linear& layer, const at::Tensor& x,
                      const at::Tensor& residual);
// layer(x) for each layer, all of the same input. Without gradients the products
// share one split over the cores (one hand-off instead of one per layer, and
// products too small to split alone are split too); otherwise linear() each.
std::vector<at::Tensor> linear_each(const EngineOptions& engine,
                                    const std::vector<torch::nn::Linear*>& layers, const at::Tensor& x);
// With gradients, linear_each's bias-free layers form one autograd node whose
// backward is one product for x's gradient and one for the weights' (under
// reference options: linear() each, their input gradients summed by autograd).

// How many column parts linear() uses for an [rows x k] x [k x n] product
// (matrix_threads(engine) when set, else by shape and BLAS threading).
int linear_parts(const EngineOptions& engine, int64_t rows, int64_t n, int64_t k);

}  // namespace translution
