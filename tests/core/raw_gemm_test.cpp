// raw_gemm is at::mm on raw memory: every transpose combination, both precisions.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
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

// Matrices inside wider rows (as one head's columns of a [N, H x dh] tensor): the
// leading dimensions, not the matrix widths, step from row to row, and c's other
// columns stay untouched.
TEST(RawGemm, StridedMatchesATenOnColumnSlices) {
  at::manual_seed(4);
  const int64_t m = 6, n = 5, k = 7;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const at::Tensor wide_a = ta ? at::randn({k, m + 3}, at::kDouble) : at::randn({m, k + 3}, at::kDouble);
      const at::Tensor wide_b = tb ? at::randn({n, k + 2}, at::kDouble) : at::randn({k, n + 2}, at::kDouble);
      const at::Tensor a = wide_a.narrow(1, 1, ta ? m : k), b = wide_b.narrow(1, 2, tb ? k : n);
      ASSERT_TRUE(raw_gemm_rows_usable(a) && raw_gemm_rows_usable(b));
      at::Tensor wide_c = at::full({m, n + 4}, 42.0, at::kDouble);
      raw_gemm_strided<double>(ta, tb, m, n, k, a.data_ptr<double>(), a.stride(0), b.data_ptr<double>(), b.stride(0),
                               wide_c.data_ptr<double>() + 3, wide_c.stride(0));
      const at::Tensor expected = at::mm(ta ? a.t() : a, tb ? b.t() : b);
      EXPECT_LT((wide_c.narrow(1, 3, n) - expected).abs().max().item<double>(), 1e-12)
          << "trans_a " << ta << ", trans_b " << tb;
      EXPECT_EQ(wide_c.narrow(1, 0, 3).eq(42.0).all().item<bool>(), true) << "columns left of c were written";
      EXPECT_EQ(wide_c.narrow(1, 3 + n, 1).eq(42.0).all().item<bool>(), true) << "columns right of c were written";
    }
}

// accumulate adds the product to what c holds (the BLAS's beta = 1), in both types.
TEST(RawGemm, AccumulateAddsTheProductToC) {
  at::manual_seed(5);
  const int64_t m = 9, n = 20, k = 13;
  for (const auto type : {at::kDouble, at::kFloat}) {
    const at::Tensor a = at::randn({m, k}, type), b = at::randn({n, k}, type), c0 = at::randn({m, n}, type);
    at::Tensor c = c0.clone();
    AT_DISPATCH_FLOATING_TYPES(type, "accumulate", [&] {
      raw_gemm_strided<scalar_t>(false, true, m, n, k, a.data_ptr<scalar_t>(), k, b.data_ptr<scalar_t>(), k,
                                 c.data_ptr<scalar_t>(), n, true);
    });
    const at::Tensor expected = c0.to(at::kDouble) + at::mm(a.to(at::kDouble), b.to(at::kDouble).t());
    EXPECT_LT((c.to(at::kDouble) - expected).abs().max().item<double>(), type == at::kDouble ? 1e-12 : 1e-4);
  }
}

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
