#pragma once
// The relative operators' per-pair arithmetic with the batch across the vector
// lanes: LoR-Translution's narrow offset matrices (24 x 24 at ViT-A) on AVX-512.
//
// cpu/pair_blocks.h projects each matrix's pair rows as one [n B, D] product, then
// takes their dot products or weighted sums. On 24-wide rows the row kernels'
// 32-column register blocks waste a quarter of every FMA, and each head's dot
// product ends in a horizontal sum of 8 values. Here 16 images fill one 512-bit
// vector: the inputs are transposed to [B / 16, T, C, 16], a matrix's entries are
// broadcast from L1 into FMAs whose every lane is useful, the per-head dot
// products and weighted sums are vertical, and a matrix's gradient is summed over
// its pairs and image groups in registers before one reduction per entry
// (docs/performance.md).
//
// The same contracts as pair_blocks.h's functions, which call these where
// pair_lanes_apply holds, but forward keeps no rows: backward projects them again,
// which takes less memory and less time than writing them out and reading them
// back (docs/performance.md, "The per-pair arithmetic: vector lanes and cache
// blocks"). The logits, alpha and
// their gradients stay in pair_blocks' pair-ordered planes [B H, R], each vector
// of 16 images gathered from them or scattered into them.
#include <array>
#include <cstdint>
#include <initializer_list>

#include <ATen/core/Tensor.h>

#include "cpu/pair_blocks.h"

namespace translution {

// Where the lanes run: the Lanes pair kernels (cpu/pair_kernels.h), a CPU with
// AVX-512, float, a batch that is a multiple of 16, inputs and rows at most 32
// wide in multiples of 8 (wider matrices fill the row kernels' blocks), no
// bfloat16 products or copies, at most 32 heads, and 16 x heads x pairs within
// 32-bit offsets.
bool pair_lanes_apply(const PairTable& table, int64_t heads, std::initializer_list<const PairSide*> sides);

// Whether a backward runs on the lanes: no side kept rows (the blocked path's
// forward did) and pair_lanes_apply holds.
bool pair_lanes_backward(const PairTable& table, int64_t heads, std::initializer_list<const PairSide*> sides);

at::Tensor lanes_logits(const PairTable& table, PairSide& q, PairSide& k, int64_t heads);
std::array<at::Tensor, 4> lanes_logits_backward(const PairTable& table, const PairSide& q, const PairSide& k,
                                                const at::Tensor& grad);
at::Tensor lanes_values(const PairTable& table, const at::Tensor& alpha, PairSide& v, bool head_sliced,
                        at::Tensor* alpha_planes);
std::array<at::Tensor, 3> lanes_values_backward(const PairTable& table, const at::Tensor& alpha_planes,
                                                const PairSide& v, const at::Tensor& dout, bool head_sliced);

}  // namespace translution
