// blas_gemm is at::mm on raw memory: every transpose combination, both precisions.

#include <filesystem>
#include <iterator>
#include <thread>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>
#ifdef TRANSLUTION_HAVE_DNNL
#include <omp.h>  // the OpenMP count oneDNN threads by
#endif

#include "cpu/blas_gemm.h"
#include "cpu/linear.h"
#include "test_switches.h"
#include "util/device.h"

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
      ASSERT_TRUE(blas_gemm_usable(a)) << "no BLAS symbol found in this process";
      at::Tensor c = at::full({m, n}, 42.0, dtype);  // beta = 0: old contents must not leak in
      blas_gemm<T>(ta, tb, m, n, k, a.data_ptr<T>(), b.data_ptr<T>(), c.data_ptr<T>());
      const at::Tensor expected = at::mm(ta ? a.t() : a, tb ? b.t() : b);
      EXPECT_LT((c - expected).abs().max().item<double>(), tolerance)
          << "trans_a " << ta << ", trans_b " << tb;
    }
}

TEST(BlasGemm, MatchesATenForEveryTransposeInDouble) { check<double>(at::kDouble, 1e-12); }
TEST(BlasGemm, MatchesATenForEveryTransposeInFloat) { check<float>(at::kFloat, 1e-4); }

// Matrices inside wider rows (as one head's columns of a [N, H x dh] tensor): the
// leading dimensions, not the matrix widths, step from row to row, and c's other
// columns stay untouched.
TEST(BlasGemm, StridedMatchesATenOnColumnSlices) {
  at::manual_seed(4);
  const int64_t m = 6, n = 5, k = 7;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const at::Tensor wide_a = ta ? at::randn({k, m + 3}, at::kDouble) : at::randn({m, k + 3}, at::kDouble);
      const at::Tensor wide_b = tb ? at::randn({n, k + 2}, at::kDouble) : at::randn({k, n + 2}, at::kDouble);
      const at::Tensor a = wide_a.narrow(1, 1, ta ? m : k), b = wide_b.narrow(1, 2, tb ? k : n);
      ASSERT_TRUE(blas_gemm_rows_usable(a) && blas_gemm_rows_usable(b));
      at::Tensor wide_c = at::full({m, n + 4}, 42.0, at::kDouble);
      blas_gemm_strided<double>(ta, tb, m, n, k, a.data_ptr<double>(), a.stride(0), b.data_ptr<double>(),
                                b.stride(0), wide_c.data_ptr<double>() + 3, wide_c.stride(0));
      const at::Tensor expected = at::mm(ta ? a.t() : a, tb ? b.t() : b);
      EXPECT_LT((wide_c.narrow(1, 3, n) - expected).abs().max().item<double>(), 1e-12)
          << "trans_a " << ta << ", trans_b " << tb;
      EXPECT_EQ(wide_c.narrow(1, 0, 3).eq(42.0).all().item<bool>(), true) << "columns left of c were written";
      EXPECT_EQ(wide_c.narrow(1, 3 + n, 1).eq(42.0).all().item<bool>(), true)
          << "columns right of c were written";
    }
}

// accumulate adds the product to what c holds (the BLAS's beta = 1), in both types.
TEST(BlasGemm, AccumulateAddsTheProductToC) {
  at::manual_seed(5);
  const int64_t m = 9, n = 20, k = 13;
  for (const auto type : {at::kDouble, at::kFloat}) {
    const at::Tensor a = at::randn({m, k}, type), b = at::randn({n, k}, type), c0 = at::randn({m, n}, type);
    at::Tensor c = c0.clone();
    AT_DISPATCH_FLOATING_TYPES(type, "accumulate", [&] {
      blas_gemm_strided<scalar_t>(false, true, m, n, k, a.data_ptr<scalar_t>(), k, b.data_ptr<scalar_t>(), k,
                                  c.data_ptr<scalar_t>(), n, true);
    });
    const at::Tensor expected = c0.to(at::kDouble) + at::mm(a.to(at::kDouble), b.to(at::kDouble).t());
    EXPECT_LT((c.to(at::kDouble) - expected).abs().max().item<double>(), type == at::kDouble ? 1e-12 : 1e-4);
  }
}

TEST(BlasGemm, OnlyContiguousCpuFloatingMemoryIsUsable) {
  EXPECT_FALSE(blas_gemm_usable(at::randn({4, 6}).t()));
  EXPECT_FALSE(blas_gemm_usable(at::ones({4, 4}, at::kLong)));
  EXPECT_FALSE(blas_gemm_usable(at::Tensor()));
  EXPECT_TRUE(blas_gemm_usable(at::randn({4, 4})));
  // The reference runs its products through at::mm: the dense layer's door leaves
  // them to the module's own forward (no engine node) on memory the BLAS could read.
  torch::nn::Linear layer(4, 6);
  const at::Tensor x = at::randn({3, 4}).requires_grad_(true);
  const std::string engine = linear(EngineOptions{}, layer, x).grad_fn()->name();
  const std::string reference = linear(test_support::reference_options(), layer, x).grad_fn()->name();
  EXPECT_NE(engine.find("SplitLinear"), std::string::npos) << engine;
  EXPECT_EQ(reference.find("SplitLinear"), std::string::npos) << reference;
}

// The oneDNN tests: they need LibTorch's oneDNN sgemm and OpenBLAS (whose thread
// count decides what oneDNN takes), and read the OpenMP count oneDNN threads by.
class OneDnnSgemm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!onednn_sgemm_available()) GTEST_SKIP() << "this LibTorch exposes no oneDNN sgemm";
    if (blas_threads() == 0) GTEST_SKIP() << "the BLAS is not OpenBLAS: its thread count cannot be set";
  }
#ifdef TRANSLUTION_HAVE_DNNL
  int omp_threads() const { return omp_get_max_threads(); }
  void set_omp_threads(int threads) const { omp_set_num_threads(threads); }
#else  // never reached: SetUp skips without oneDNN
  int omp_threads() const { return 1; }
  void set_omp_threads(int) const {}
#endif
};

// Float products large enough for oneDNN (cpu/blas_gemm.h), one thread per product
// as in a split training step: every transpose, inside wider rows, with and
// without accumulating, against double products; and the same through the BLAS.
TEST_F(OneDnnSgemm, LargeFloatProductsMatchDoubleProducts) {
  const ScopedBlasThreads one_thread(1);
  at::manual_seed(6);
  const int64_t m = 97, n = 83, k = 71;  // 571 k multiply-adds: above the bound, odd sizes
  ASSERT_GE(m * n * k, kOneDnnLeastWork);
  for (bool library : {true, false}) {
    // OpenBLAS threading each GEMM over two threads keeps every product.
    const ScopedBlasThreads blas(library ? 1 : 2);
    if (!library && blas_threads() != 2) continue;
    EXPECT_EQ(onednn_sgemm_takes(m, n, k), library);
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (bool accumulate : {false, true}) {
          const int64_t products = onednn_sgemm_products();  // oneDNN ran it (a refusal would fall back)
          const at::Tensor wide_a = ta ? at::randn({k, m + 3}) : at::randn({m, k + 3});
          const at::Tensor wide_b = tb ? at::randn({n, k + 2}) : at::randn({k, n + 2});
          const at::Tensor a = wide_a.narrow(1, 1, ta ? m : k), b = wide_b.narrow(1, 2, tb ? k : n);
          at::Tensor wide_c = at::randn({m, n + 4});
          const at::Tensor c0 = wide_c.narrow(1, 3, n).to(at::kDouble);
          blas_gemm_strided<float>(ta, tb, m, n, k, a.data_ptr<float>(), a.stride(0), b.data_ptr<float>(),
                                   b.stride(0), wide_c.data_ptr<float>() + 3, wide_c.stride(0), accumulate);
          const at::Tensor product =
              at::mm((ta ? a.t() : a).to(at::kDouble), (tb ? b.t() : b).to(at::kDouble));
          const at::Tensor expected = accumulate ? c0 + product : product;
          EXPECT_LT((wide_c.narrow(1, 3, n).to(at::kDouble) - expected).abs().max().item<double>(), 1e-3)
              << "oneDNN " << library << ", trans_a " << ta << ", trans_b " << tb << ", accumulate "
              << accumulate;
          EXPECT_EQ(onednn_sgemm_products() - products, library ? 1 : 0)
              << "trans_a " << ta << ", trans_b " << tb << ", accumulate " << accumulate;
        }
  }
}

// What goes to oneDNN: float products from the bound up, while OpenBLAS runs one
// thread per product, and the switch on.
TEST_F(OneDnnSgemm, TakesLargeProductsOfOneThreadEach) {
  {
    const ScopedBlasThreads one_thread(1);
    EXPECT_TRUE(onednn_sgemm_takes(64, 128, 64));   // exactly 2^19
    EXPECT_FALSE(onednn_sgemm_takes(64, 128, 63));  // one head's logits and smaller: the BLAS's small kernels
    // The reference options never reach it: a dense layer's products under them are LibTorch's own.
    torch::nn::Linear layer(192, 576);
    const at::Tensor x = at::randn({800, 192});
    const at::NoGradGuard no_grad;
    const int64_t products = onednn_sgemm_products();
    const at::Tensor y = linear(test_support::reference_options(), layer, x);
    EXPECT_EQ(onednn_sgemm_products(), products);
    EXPECT_LT((y - layer->forward(x)).abs().max().item<double>(), 1e-4);
  }
  const ScopedBlasThreads two_threads(2);  // a GEMM threaded over the cores stays with OpenBLAS
  EXPECT_FALSE(onednn_sgemm_takes(800, 576, 192));
}

int64_t process_threads() {
  const std::filesystem::directory_iterator tasks("/proc/self/task");
  return int64_t(std::distance(begin(tasks), end(tasks)));
}

// A thread of the engine's own calls oneDNN on itself alone (OpenMP keeps a team's
// threads alive after its first parallel region: none may appear), and keeps its
// OpenMP thread count (LibTorch's intra-op threads read it) as it was.
TEST_F(OneDnnSgemm, RunsOnTheCallingThreadAndRestoresItsOpenMpCount) {
  const ScopedBlasThreads one_thread(1);
  const at::Tensor a = at::randn({128, 96}), b = at::randn({96, 80});
  const at::Tensor expected = at::mm(a.to(at::kDouble), b.to(at::kDouble));
  int before = 0, after = 0;
  int64_t threads_before = 0, threads_after = 0;
  const int64_t products = onednn_sgemm_products();
  at::Tensor c = at::empty({128, 80});
  std::thread worker([&] {
    set_omp_threads(3);
    before = omp_threads();
    threads_before = process_threads();
    blas_gemm<float>(false, false, 128, 80, 96, a.data_ptr<float>(), b.data_ptr<float>(),
                     c.data_ptr<float>());
    threads_after = process_threads();
    after = omp_threads();
  });
  worker.join();
  EXPECT_EQ(before, 3);
  EXPECT_EQ(after, 3);
  EXPECT_EQ(onednn_sgemm_products() - products, 1) << "the product did not run on oneDNN";
  EXPECT_EQ(threads_after, threads_before) << "oneDNN started threads of its own";
  EXPECT_LT((c.to(at::kDouble) - expected).abs().max().item<double>(), 1e-3);
}

// The benchmarks' GEMM reference on every core: the product itself, threaded as
// asked, and the caller's OpenMP count kept.
TEST_F(OneDnnSgemm, OnThreadsMultipliesAndKeepsTheCallersCount) {
  const int before = omp_threads();
  at::manual_seed(7);
  const at::Tensor a = at::randn({67, 45}), b = at::randn({45, 38});
  at::Tensor c = at::full({67, 38}, 42.0f);
  const int64_t products = onednn_sgemm_products();
  ASSERT_TRUE(
      onednn_sgemm_on_threads(2, 67, 38, 45, a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>()));
  EXPECT_EQ(onednn_sgemm_products() - products, 1);
  EXPECT_EQ(omp_threads(), before);
  EXPECT_LT((c.to(at::kDouble) - at::mm(a.to(at::kDouble), b.to(at::kDouble))).abs().max().item<double>(),
            1e-3);
}

}  // namespace
}  // namespace translution
