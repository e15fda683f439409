#pragma once
// bfloat16 copies of a model's offset-matrix banks, for forwards without gradients.
//
// Classifying one image with Translution ViT-A/12 streams 457 MB of fp32 offset
// matrices through two cores once per forward (about 15 rows meet each matrix):
// the forward is bound by memory, not arithmetic (docs/performance.md). Read as
// bfloat16 they are half the bytes. Only the weights are rounded (to nearest,
// ties to even); activations and every sum stay fp32 (cpu/avx512_gemm.h's
// avx512_gemm_bf16), so a product differs from fp32 by the weights' relative
// rounding, at most 2^-9. It still changes the numbers, so it is opt-in
// (`translution bench --mode infer --precision bf16`, `translution eval
// --precision bf16`), never the default.
//
// A Bf16Weights is a snapshot: made from a model's current weights, put in
// force for a run by EngineOptions::bf16_weights. A bank whose weights changed since
// (its version counter moved: an optimizer step, a checkpoint loaded into it;
// or its memory was replaced) is read in fp32 again, never from a stale copy.
// The snapshot does not keep the fp32 banks or their memory alive (cpu/weight_stamp.h).
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "cpu/avx512_gemm.h"
#include "cpu/weight_stamp.h"
#include "util/engine_options.h"

namespace translution {

// Whether this machine can read weights as bfloat16 (avx512_gemm_bf16: AVX-512).
bool bf16_weights_available();

// bank [..., n] (float, n a multiple of 32) rounded to bfloat16 (to nearest, ties
// to even) in avx512_gemm_bf16's strip layout, as a bfloat16 tensor of bank's shape.
at::Tensor bf16_strip_layout(const at::Tensor& bank);

class Bf16Weights {
 public:
  // Copies every one of the offset-matrix banks (nn/attention.h's relative_banks)
  // that avx512_gemm_bf16 can multiply: float [E, C, C'], on the CPU, C' a multiple
  // of 32 (Translution's; not LoR's 24 x 24 at three heads). Throws an Error where
  // this machine cannot read them (bf16_weights_available).
  explicit Bf16Weights(const std::vector<at::Tensor>& banks);

  // The copy of this bank, or null: not one of the module's, or changed since.
  const Bf16Bits* find(const at::Tensor& bank) const;
  int64_t banks() const { return int64_t(copies_.size()); }
  int64_t bytes() const;  // the copies' memory

 private:
  struct Copy {
    WeightStamp stamp;  // the fp32 bank's state when copied
    at::Tensor bf16;    // [E, C, D] bfloat16, avx512_gemm_bf16's strip layout
  };
  std::vector<Copy> copies_;
};

// The bfloat16 copy a product with this bank reads: null unless the options name
// a snapshot, gradients are off and the bank is in it, unchanged.
const Bf16Bits* bf16_weights_for(const EngineOptions& engine, const at::Tensor& bank);

// The copy a relative projection of float input `xt` reads: in a forward without gradients
// (copies), with float products (not bf16), bf16_weights_for's; else null.
const Bf16Bits* weight_copy(const EngineOptions& engine, const at::Tensor& bank, const at::Tensor& xt,
                            bool bf16, bool copies);

}  // namespace translution
