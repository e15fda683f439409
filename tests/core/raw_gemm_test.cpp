// raw_gemm is at::mm on raw memory: every transpose combination, both precisions.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "nn/raw_gemm.h"

namespace translution {
namespace {

template <typename T>
void check(at::ScalarType dtype, double tolerance) {
  at::manual_seed(3);
  const int64_t m = 7, n = 5, k = 11;  // distinct odd sizes catch swapped dimensions
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const at::Tensor a = ta ? at::randn({k, m}, dtype) : at::randn({m, k}, dtype);
      const at::Tensor b = tb ? at::randn({n, k}, dtype) : at::randn({k, n}, dtype);
      ASSERT_TRUE(raw_gemm_usable(a)) << "no BLAS symbol found in this process";
      at::Tensor c = at::full({m, n}, 42.0, dtype);  // beta = 0: old contents must not leak in
      raw_gemm<T>(ta, tb, m, n, k, a.data_ptr<T>(), b.data_ptr<T>(), c.data_ptr<T>());
      const at::Tensor expected = at::mm(ta ? a.t() : a, tb ? b.t() : b);
      EXPECT_LT((c - expected).abs().max().item<double>(), tolerance) << "trans_a " << ta << ", trans_b " << tb;
    }
}

TEST(RawGemm, MatchesATenForEveryTransposeInDouble) { check<double>(at::kDouble, 1e-12); }
TEST(RawGemm, MatchesATenForEveryTransposeInFloat) { check<float>(at::kFloat, 1e-4); }

TEST(RawGemm, OnlyContiguousCpuFloatingMemoryIsUsable) {
  EXPECT_FALSE(raw_gemm_usable(at::randn({4, 6}).t()));
  EXPECT_FALSE(raw_gemm_usable(at::ones({4, 4}, at::kLong)));
  EXPECT_FALSE(raw_gemm_usable(at::Tensor()));
  set_raw_gemm_enabled(false);
  EXPECT_FALSE(raw_gemm_usable(at::randn({4, 4})));
  set_raw_gemm_enabled(true);
  EXPECT_TRUE(raw_gemm_usable(at::randn({4, 4})));
}

}  // namespace
}  // namespace translution
