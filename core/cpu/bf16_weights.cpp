#include "cpu/bf16_weights.h"

#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include "util/device.h"
#include "util/error.h"

namespace translution {

at::Tensor bf16_strip_layout(const at::Tensor& bank) {
  const int64_t n = bank.size(-1);
  if (n % 32 != 0)
    throw Error("internal: bf16_strip_layout needs rows of whole 32-column strips, got " + std::to_string(n));
  std::vector<int64_t> strips = bank.sizes().vec();
  strips.back() = n / 32;
  strips.push_back(2);
  strips.push_back(16);  // [..., strip, half, column]: interleave the halves column by column
  // LibTorch's conversion rounds to nearest, ties to even.
  return bank.detach().to(at::kBFloat16).reshape(strips).transpose(-1, -2).contiguous().view(bank.sizes());
}

bool bf16_weights_available() { return cpu_has_avx512(); }

Bf16Weights::Bf16Weights(const std::vector<at::Tensor>& banks) {
  if (!bf16_weights_available())
    throw Error("bfloat16 weights need AVX-512, which this CPU lacks; use --precision fp32");
  at::NoGradGuard no_grad;
  for (const at::Tensor& bank : banks) {
    if (!bank.is_cpu() || bank.is_inference() || bank.scalar_type() != at::kFloat || bank.dim() != 3 ||
        !bank.is_contiguous() || !avx512_gemm_bf16_width_ok(bank.size(2)))
      continue;
    copies_.push_back({WeightStamp(bank), bf16_strip_layout(bank)});
  }
}

const Bf16Bits* Bf16Weights::find(const at::Tensor& bank) const {
  const void* data = bank.data_ptr();
  for (const Copy& c : copies_)
    if (c.stamp.data() == data)
      return c.stamp.matches(bank) && c.bf16.sizes() == bank.sizes()
                 ? reinterpret_cast<const Bf16Bits*>(c.bf16.data_ptr<at::BFloat16>())
                 : nullptr;
  return nullptr;
}

int64_t Bf16Weights::bytes() const {
  int64_t n = 0;
  for (const Copy& c : copies_) n += c.bf16.numel() * 2;
  return n;
}

const Bf16Bits* bf16_weights_for(const EngineOptions& engine, const at::Tensor& bank) {
  if (!engine.bf16_weights || c10::GradMode::is_enabled() || !bank.defined() || !bank.is_cpu())
    return nullptr;
  return engine.bf16_weights->find(bank);
}

const Bf16Bits* weight_copy(const EngineOptions& engine, const at::Tensor& bank, const at::Tensor& xt,
                            bool bf16, bool copies) {
  return copies && !bf16 && xt.scalar_type() == at::kFloat ? bf16_weights_for(engine, bank) : nullptr;
}

}  // namespace translution
