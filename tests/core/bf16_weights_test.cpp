// bfloat16 copies of the offset matrices for forwards without gradients
// (cpu/bf16_weights.h): avx512_gemm_bf16 against a double product with b rounded to
// bfloat16, for every block shape; a Translution layer reading the copies against
// the per-pair reference on rounded banks; and the rules that keep a copy from
// being read where it must not be: changed weights, gradients on, options that
// name no snapshot, banks it cannot multiply (LoR's 24 wide).
// Skipped where the CPU has no AVX-512.
#include "cpu/bf16_weights.h"

#include <thread>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "cpu/avx512_gemm.h"
#include "cpu/pair_kernels.h"
#include "naive_attention.h"
#include "nn/attention.h"
#include "nn/relative_projection.h"
#include "nn/vit.h"
#include "tensor_checks.h"
#include "test_switches.h"
#include "util/error.h"

namespace translution {
namespace {

using test_support::max_relative_error;

#define SKIP_WITHOUT_AVX512() SKIP_WITHOUT_AVX512_KERNEL(bf16_weights_available())

at::Tensor rounded(const at::Tensor& t) { return t.to(at::kBFloat16).to(t.scalar_type()); }

// c = a b into rows of ldc starting 3 columns in, b given in bfloat16's strip
// layout in rows of ldb (one strip in from the left); the worst error against the
// double product with the rounded b, relative to the sum of |a||b| over k; no
// other column may be touched.
double worst_error(int64_t m, int64_t n, int64_t k) {
  const at::Tensor wide_a = at::randn({m, k + 3});
  const at::Tensor a = wide_a.narrow(1, 2, k);
  const at::Tensor wide_b = at::randn({k, n + 64});
  const at::Tensor strips = bf16_strip_layout(wide_b);
  const at::Tensor b16 = rounded(wide_b).narrow(1, 32, n);
  at::Tensor wide_c = at::full({m, n + 5}, 42.0f);
  avx512_gemm_bf16(m, n, k, a.data_ptr<float>(), a.stride(0),
                   reinterpret_cast<const Bf16Bits*>(strips.data_ptr<at::BFloat16>()) + 32, strips.stride(0),
                   wide_c.data_ptr<float>() + 3, wide_c.stride(0));
  EXPECT_TRUE(wide_c.narrow(1, 0, 3).eq(42.0f).all().item<bool>()) << "columns left of c were written";
  EXPECT_TRUE(wide_c.narrow(1, 3 + n, 2).eq(42.0f).all().item<bool>()) << "columns right of c were written";
  const at::Tensor ad = a.to(at::kDouble),
                   bd = b16.to(at::kDouble);  // exact: a rounded float widens without loss
  const at::Tensor error = (wide_c.narrow(1, 3, n).to(at::kDouble) - at::mm(ad, bd)).abs();
  return (error / (at::mm(ad.abs(), bd.abs()) + 1e-30)).max().item<double>();
}

// Every block height (1-12, and 2-4 blocks of unequal heights up to 40 rows),
// 32-column strips, 64-column sweeps for at most 6 rows (64; 96 ends in a
// 32-column strip after one; 192 = Translution's width), k = 1 (one step) to 33.
TEST(Avx512GemmBf16, MatchesTheDoubleProductWithTheRoundedMatrix) {
  SKIP_WITHOUT_AVX512();
  at::manual_seed(3);
  for (int64_t m = 1; m <= 40; ++m)
    for (const int64_t n : {32, 64, 96, 160, 192})
      for (const int64_t k : {1, 7, 33}) {
        SCOPED_TRACE("m " + std::to_string(m) + ", n " + std::to_string(n) + ", k " + std::to_string(k));
        EXPECT_LT(worst_error(m, n, k), 1e-5);
      }
  EXPECT_LT(worst_error(200, 64, 192), 1e-5) << "a batch's rows";
}

// The strip layout: each row's 32 columns interleaved t, 16 + t, as bfloat16.
TEST(Avx512GemmBf16, StripLayoutInterleavesEachStripsHalves) {
  const at::Tensor bank = at::arange(2 * 3 * 64, at::kFloat).view({2, 3, 64});
  const at::Tensor strips = bf16_strip_layout(bank).to(at::kFloat);
  ASSERT_EQ(strips.sizes(), bank.sizes());
  for (int64_t col = 0; col < 64; ++col) {
    const int64_t strip = col / 32, t = col % 32;
    const int64_t source = strip * 32 + (t % 2 == 0 ? t / 2 : 16 + t / 2);
    EXPECT_TRUE(at::equal(strips.select(2, col), rounded(bank.select(2, source)))) << "column " << col;
  }
  EXPECT_THROW(bf16_strip_layout(at::zeros({2, 48})), Error);
}

TEST(Avx512GemmBf16, RefusesWidthsItCannotLoad) {
  SKIP_WITHOUT_AVX512();
  const at::Tensor a = at::zeros({2, 4}), b = at::zeros({4, 24}, at::kBFloat16);
  at::Tensor c = at::zeros({2, 24});
  EXPECT_FALSE(avx512_gemm_bf16_width_ok(24));
  EXPECT_FALSE(avx512_gemm_bf16_width_ok(16)) << "half a strip";
  EXPECT_TRUE(avx512_gemm_bf16_width_ok(32));
  EXPECT_THROW(avx512_gemm_bf16(2, 24, 4, a.data_ptr<float>(), 4,
                                reinterpret_cast<const Bf16Bits*>(b.data_ptr()), 24, c.data_ptr<float>(), 24),
               Error);
}

struct Layer {
  AttentionSpec spec = attention_choice("translution").spec;
  AttentionShape shape{64, 2, 32};
  TokenLayout layout = TokenLayout::grid(3, 4, true);
  std::shared_ptr<AttentionModule> module = make_attention(spec, shape, layout);
};

// The forward reads the copies: it equals the paper's equations (per-pair
// reference, double) with the banks rounded and everything else as it is, and
// differs from the fp32 forward. Both matrix parts run (two threads).
TEST(Bf16Weights, ATranslutionLayerReadsTheRoundedBanks) {
  SKIP_WITHOUT_AVX512();
  at::manual_seed(4);
  Layer l;
  const Bf16Weights weights(relative_banks(*l.module));
  EXPECT_EQ(weights.banks(), 3) << "q, k and v";
  EXPECT_EQ(weights.bytes(), 3 * l.module->relative_banks()[0].numel() * 2);
  for (const int64_t batch : {int64_t(1), int64_t(5)}) {
    const at::Tensor x = at::randn({batch, l.layout.tokens(), 64});
    at::Tensor got, fp32;
    {
      at::NoGradGuard no_grad;
      const EngineOptions two = test_support::threads_options(2);
      fp32 = l.module->forward(two, x, nullptr);
      got = l.module->forward(with<const Bf16Weights*>(two, &EngineOptions::bf16_weights, &weights), x,
                              nullptr);
    }
    auto reference = make_attention(l.spec, l.shape, l.layout);
    reference->to(at::kDouble);
    {
      at::NoGradGuard no_grad;
      const auto fast = l.module->named_parameters();
      for (auto& p : reference->named_parameters()) {
        const at::Tensor v = fast[p.key()].detach();
        p.value().copy_(v.dim() == 3 ? rounded(v) : v);  // only the banks are rounded
      }
    }
    const at::Tensor want =
        test_support::naive_attention(*reference, l.spec, l.shape, l.layout, x.to(at::kDouble)).detach();
    EXPECT_LT(max_relative_error(got, want), 1e-5) << "batch " << batch;
    EXPECT_GT(max_relative_error(got, fp32.to(at::kDouble)), 1e-5) << "the copies were not read";
  }
}

TEST(Bf16Weights, NeverReadWhereTheyMustNotBe) {
  SKIP_WITHOUT_AVX512();
  at::manual_seed(6);
  Layer l;
  const Bf16Weights weights(relative_banks(*l.module));
  const at::Tensor bank = l.module->relative_banks()[0];
  const at::Tensor x = at::randn({2, l.layout.tokens(), 64});
  const EngineOptions none;
  const EngineOptions copies = with<const Bf16Weights*>(none, &EngineOptions::bf16_weights, &weights);
  auto forward = [&](const EngineOptions& engine) {
    at::NoGradGuard no_grad;
    return l.module->forward(engine, x, nullptr);
  };
  const at::Tensor fp32 = forward(none);
  const at::Tensor fp32_with_grad = l.module->forward(none, x, nullptr).detach();
  {
    at::NoGradGuard no_grad;
    EXPECT_EQ(bf16_weights_for(none, bank), nullptr) << "options naming no snapshot";
    EXPECT_NE(bf16_weights_for(copies, bank), nullptr);
    EXPECT_EQ(bf16_weights_for(copies, at::zeros_like(bank)), nullptr) << "a bank it was not made from";
  }
  EXPECT_EQ(bf16_weights_for(copies, bank), nullptr) << "gradients on: training reads the fp32 weights";
  const at::Tensor with_grad = l.module->forward(copies, x, nullptr).detach();
  EXPECT_TRUE(at::equal(with_grad, fp32_with_grad));
  // The snapshot goes where its options go, whichever thread computes.
  std::thread other([&] {
    at::NoGradGuard no_grad;
    EXPECT_NE(bf16_weights_for(copies, bank), nullptr) << "the same options on another thread";
  });
  other.join();
  EXPECT_TRUE(at::equal(forward(none), fp32)) << "options without the snapshot, after a forward with it";
  EXPECT_FALSE(at::equal(forward(copies), fp32)) << "the copies read";
  // Weights changed in place after the copy (an optimizer step, a checkpoint
  // loaded into them): read in fp32 again, never from the stale copy.
  {
    at::NoGradGuard no_grad;
    l.module->relative_banks()[1].mul_(0.5);
  }
  const at::Tensor changed = forward(copies);
  {
    at::NoGradGuard no_grad;
    EXPECT_EQ(bf16_weights_for(copies, l.module->relative_banks()[1]), nullptr);
  }
  EXPECT_TRUE(at::allclose(changed.narrow(0, 0, 1), forward(none).narrow(0, 0, 1), 1e-3, 1e-3))
      << "the changed bank in fp32, the others from their copies";
}

// Copies are read per matrix whichever algorithm is set (the all-tokens product
// would read the fp32 bank), and a bank whose memory was replaced reads fp32.
TEST(Bf16Weights, AlgorithmAndReplacedMemory) {
  SKIP_WITHOUT_AVX512();
  at::manual_seed(8);
  Layer l;
  const Bf16Weights weights(relative_banks(*l.module));
  const at::Tensor x = at::randn({2, l.layout.tokens(), 64});
  at::NoGradGuard no_grad;
  const EngineOptions copies = with<const Bf16Weights*>({}, &EngineOptions::bf16_weights, &weights);
  // Per matrix (the pair arithmetic inside each matrix's block) and for all tokens
  // at once the copies are read: the same products, the pair arithmetic on other kernels.
  const at::Tensor per_matrix = l.module->forward(copies, x, nullptr);
  const at::Tensor all_tokens =
      l.module->forward(with(copies, &EngineOptions::projection, ProjectionAlgorithm::AllTokens), x, nullptr);
  EXPECT_LT(max_relative_error(all_tokens, per_matrix), 1e-5) << "blocked pair arithmetic";
  at::Tensor bank = l.module->relative_banks()[2];
  bank.set_data(bank.clone());  // same values, new memory
  EXPECT_EQ(bf16_weights_for(copies, bank), nullptr);
  EXPECT_NE(bf16_weights_for(copies, l.module->relative_banks()[0]), nullptr)
      << "the others still read their copies";
}

TEST(Bf16Weights, CopiesOnlyBanksItCanMultiply) {
  SKIP_WITHOUT_AVX512();
  ViTConfig lor;
  lor.model = "lor";
  lor.image_height = lor.image_width = 28;
  lor.patch = 7;
  lor.depth = 2;
  lor.dim = 64;
  lor.heads = 3;
  lor.head_dim = 32;
  lor.mlp_dim = 128;
  ViT lor_model(lor);
  EXPECT_EQ(Bf16Weights(relative_banks(*lor_model)).banks(), 0)
      << "LoR's matrices are 8 x 3 heads = 24 wide: no whole strips of 32";
  ViTConfig translution = lor;
  translution.model = "translution";
  ViT model(translution);
  EXPECT_EQ(Bf16Weights(relative_banks(*model)).banks(), 6) << "q, k, v of two layers";
  ViTConfig attention = lor;
  attention.model = "attention";
  ViT plain(attention);
  EXPECT_EQ(Bf16Weights(relative_banks(*plain)).banks(), 0);
}

}  // namespace
}  // namespace translution
