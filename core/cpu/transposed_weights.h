#pragma once
// Transposed copies of dense layers' weights, for one image's products.
//
// A linear layer stores W as [out x in]; one image's product x W^T has about 50
// rows, which OpenBLAS's small-matrix kernel runs at a fraction of the core's FMA
// rate. The engine's row kernel (cpu/avx512_gemm.h) needs W^T row-major, and on a
// transposed copy it takes less time (docs/performance.md, "Few-row products: the
// engine's row kernel"). A forward
// without gradients therefore reads such a copy, made once per weight and kept
// while the weight lives and is unchanged.
//
// The copy is made again when the weight changed: its version counter moved (an
// optimizer step, a checkpoint loaded into it) or its memory was replaced. The
// cache holds no weight or weight memory alive; copies of weights that are gone
// or changed are dropped at the next copy made. Safe to call from several
// threads (the studio's two slots).
#include <cstdint>

#include <ATen/core/Tensor.h>

namespace translution {

// Columns of w^T per strip of the copy.
constexpr int64_t kWeightStrip = 32;

// w^T in strips, for a CPU float [out x in] weight with out a multiple of
// kWeightStrip: [out / 32, in, 32] contiguous, strip s holding w^T's columns
// [32 s, 32 s + 32), so that the row kernel streams each strip from memory in
// order (w^T whole, [in x out], has a 32-column strip's rows a row of w^T
// apart: cold weights would come in slower than OpenBLAS reads w's own rows).
// Undefined for anything else. The returned tensor stays valid while the caller
// holds it, whatever other threads do.
at::Tensor transposed_weight(const at::Tensor& w);

// How many copies the cache holds now, and how many it has made (tests).
int64_t transposed_weights_cached();
int64_t transposed_weights_made();

}  // namespace translution
