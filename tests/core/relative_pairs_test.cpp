// The CUDA kernels' arithmetic (core/cuda/relative_pairs.h), run on the CPU over small
// shapes against the per-pair formulas in ATen, double precision: every logit, value
// element and element of every input's gradient (autograd's, through the formulas),
// on a grid with CLS and on a causal sequence (hidden pairs).
#include "cuda/relative_pairs.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>
#include <torch/cuda.h>

#include "gpu/relative_kernels.h"
#include "nn/token_layout.h"
#include "tensor_checks.h"
#include "util/error.h"

namespace translution {
namespace {

using cuda_kernels::RelativeShape;

struct Pairs {
  RelativeShape shape;
  std::vector<int64_t> entry_of;  // [M, N], -1 where hidden
  int64_t entries = 0;
};

// The first `queries` rows of the layout's pairs, hidden ones as -1.
Pairs pairs_of(const TokenLayout& layout, int64_t queries, int64_t dim, int64_t heads, int64_t head_dim) {
  const RelativeTable table = make_relative_table(layout);
  Pairs p;
  p.shape = RelativeShape{2, table.tokens(), queries, dim, heads, head_dim};
  p.entries = table.entries;
  for (int64_t k = 0; k < queries * table.tokens(); ++k)
    p.entry_of.push_back(table.visible[size_t(k)] ? table.entry_of[size_t(k)] : -1);
  return p;
}

// The largest difference between `expected` ([n] flattened) and f(k) for every k.
template <typename F>
double worst_difference(const at::Tensor& expected, F&& f) {
  const at::Tensor flat = expected.contiguous().view({-1});
  double worst = 0;
  for (int64_t k = 0; k < flat.numel(); ++k) worst = std::max(worst, std::abs(f(k) - flat[k].item<double>()));
  return worst;
}

struct Reference {
  at::Tensor logits, values;  // [B, H, M, N], [B, M, D], differentiable in every input
};

// The per-pair formulas in ATen, pair by pair: q_ij = x_i Wq[e], k_ji = x_j Wk[e], v_ij = x_j Wv[e].
Reference per_pair(const Pairs& p, const std::vector<at::Tensor>& in) {
  const RelativeShape& s = p.shape;
  const at::Tensor &xq = in[0], &wq = in[1], &xk = in[2], &wk = in[3], &xv = in[4], &wv = in[5],
                   &alpha = in[6];
  std::vector<at::Tensor> logits, values;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t i = 0; i < s.queries; ++i) {
      at::Tensor value = at::zeros({s.heads, s.head_dim}, xq.options());
      for (int64_t j = 0; j < s.tokens; ++j) {
        const int64_t e = p.entry_of[size_t(i * s.tokens + j)];
        if (e < 0) {
          logits.push_back(at::zeros({s.heads}, xq.options()));
          continue;
        }
        const at::Tensor q = at::matmul(xq[b][i], wq[e]).view({s.heads, s.head_dim});
        const at::Tensor k = at::matmul(xk[b][j], wk[e]).view({s.heads, s.head_dim});
        const at::Tensor v = at::matmul(xv[b][j], wv[e]).view({s.heads, s.head_dim});
        logits.push_back((q * k).sum(-1));
        value = value + alpha[b].select(1, i).select(1, j).unsqueeze(1) * v;
      }
      values.push_back(value.reshape({-1}));
    }
  return {at::stack(logits).view({s.batch, s.queries, s.tokens, s.heads}).permute({0, 3, 1, 2}),
          at::stack(values).view({s.batch, s.queries, s.width()})};
}

// Random inputs for a layout's first `queries` rows, the per-pair formulas' outputs and,
// for random output gradients, every input's gradient: in double on the CPU.
struct Case {
  Pairs p;
  std::vector<at::Tensor> in;  // xq, wq, xk, wk, xv, wv, alpha
  Reference ref;
  at::Tensor dlogits, dout;
  std::vector<at::Tensor> g;  // the inputs' gradients, in their order
};

Case make_case(const TokenLayout& layout, int64_t queries) {
  Case k;
  k.p = pairs_of(layout, queries, 5, 2, 3);
  const RelativeShape& s = k.p.shape;
  const int64_t B = s.batch, N = s.tokens, M = s.queries, C = s.dim, D = s.width(), E = k.p.entries;
  at::manual_seed(3);
  const auto f64 = at::TensorOptions().dtype(at::kDouble);
  k.in = {at::randn({B, N, C}, f64),        at::randn({E, C, D}, f64), at::randn({B, N, C}, f64),
          at::randn({E, C, D}, f64),        at::randn({B, N, C}, f64), at::randn({E, C, D}, f64),
          at::rand({B, s.heads, M, N}, f64)};
  for (auto& t : k.in) t.requires_grad_(true);
  k.ref = per_pair(k.p, k.in);
  k.dlogits = at::randn({B, s.heads, M, N}, f64);
  k.dout = at::randn({B, M, D}, f64);
  k.g = torch::autograd::grad({(k.ref.logits * k.dlogits).sum() + (k.ref.values * k.dout).sum()}, k.in);
  return k;
}

void check_layout(const TokenLayout& layout, int64_t queries) {
  const Case k = make_case(layout, queries);
  const Pairs& p = k.p;
  const RelativeShape& s = p.shape;
  const int64_t N = s.tokens, M = s.queries, C = s.dim, D = s.width();
  const std::vector<at::Tensor>& in = k.in;
  const Reference& ref = k.ref;
  const at::Tensor &dlogits = k.dlogits, &dout = k.dout;
  const std::vector<at::Tensor>& g = k.g;

  const double *xq = in[0].data_ptr<double>(), *wq = in[1].data_ptr<double>(), *xk = in[2].data_ptr<double>(),
               *wk = in[3].data_ptr<double>(), *xv = in[4].data_ptr<double>(), *wv = in[5].data_ptr<double>(),
               *alpha = in[6].data_ptr<double>(), *da = dlogits.data_ptr<double>(),
               *dv = dout.data_ptr<double>();
  const int64_t* entry = p.entry_of.data();
  using namespace cuda_kernels;
  const auto logit = [&](int64_t k) {
    const LogitCoordinates c = logit_coordinates(s, k);
    EXPECT_EQ(logit_index(s, c.b, c.h, c.i, c.j), k);
    return relative_logit(s, xq, wq, xk, wk, entry, c.b, c.h, c.i, c.j);
  };
  EXPECT_LT(worst_difference(ref.logits.detach(), logit), 1e-12) << "logits";
  EXPECT_LT(worst_difference(ref.values.detach(),
                             [&](int64_t k) {
                               return relative_value(s, alpha, xv, wv, entry, k / (M * D), (k / D) % M,
                                                     k % D);
                             }),
            1e-12)
      << "values";
  // [B, N, C] gradients by (image, token, column); [E, C, D] by (entry, column in, column out).
  const auto row = [&](int64_t k, auto f) { return f(k / (N * C), (k / C) % N, k % C); };
  const auto bank = [&](int64_t k, auto f) { return f(k / (C * D), (k / D) % C, k % D); };
  EXPECT_LT(worst_difference(g[0],
                             [&](int64_t k) {
                               return row(k, [&](int64_t b, int64_t t, int64_t c) {
                                 return t < M ? logit_grad_query_input(s, da, wq, xk, wk, entry, b, t, c)
                                              : 0.0;
                               });
                             }),
            1e-12)
      << "query input";
  EXPECT_LT(worst_difference(g[2],
                             [&](int64_t k) {
                               return row(k, [&](int64_t b, int64_t t, int64_t c) {
                                 return logit_grad_key_input(s, da, xq, wq, wk, entry, b, t, c);
                               });
                             }),
            1e-12)
      << "key input";
  for (const bool query_side : {true, false})
    EXPECT_LT(worst_difference(g[query_side ? 1 : 3],
                               [&](int64_t k) {
                                 return bank(k, [&](int64_t e, int64_t c, int64_t d) {
                                   return logit_grad_bank(s, da, xq, wq, xk, wk, entry, query_side, e, c, d);
                                 });
                               }),
              1e-12)
        << (query_side ? "query bank" : "key bank");
  EXPECT_LT(worst_difference(g[4],
                             [&](int64_t k) {
                               return row(k, [&](int64_t b, int64_t t, int64_t c) {
                                 return value_grad_input(s, alpha, dv, wv, entry, b, t, c);
                               });
                             }),
            1e-12)
      << "value input";
  EXPECT_LT(worst_difference(g[5],
                             [&](int64_t k) {
                               return bank(k, [&](int64_t e, int64_t c, int64_t d) {
                                 return value_grad_bank(s, alpha, dv, xv, entry, e, c, d);
                               });
                             }),
            1e-12)
      << "value bank";
  EXPECT_LT(worst_difference(g[6],
                             [&](int64_t k) {
                               const LogitCoordinates c = logit_coordinates(s, k);
                               return value_grad_alpha(s, dv, xv, wv, entry, c.b, c.h, c.i, c.j);
                             }),
            1e-12)
      << "attention weights";
}

TEST(CudaKernelArithmetic, LogitsValuesAndGradientsMatchThePerPairFormulas) {
  {
    SCOPED_TRACE("2x3 grid with CLS, every query");
    check_layout(TokenLayout::grid(2, 3, true), 7);
  }
  {
    SCOPED_TRACE("2x3 grid with CLS, the CLS query alone");
    check_layout(TokenLayout::grid(2, 3, true), 1);
  }
  SCOPED_TRACE("causal sequence of 5: hidden pairs give no logit and no value");
  check_layout(TokenLayout::sequence(5, false, true), 5);
}

// The kernels themselves, launched on a GPU through their LibTorch wrapper (gpu/relative_kernels.h),
// against the same formulas: float on the device, double here.
void check_on_cuda(const TokenLayout& layout, int64_t queries) {
  const Case k = make_case(layout, queries);
  const auto gpu = [](const at::Tensor& t) { return t.detach().to(at::kCUDA, at::kFloat); };
  const FusedPairs pairs{at::tensor(k.p.entry_of, at::kLong).view({queries, -1}).to(at::kCUDA), k.p.entries,
                         k.p.shape.heads};
  const auto expect_close = [](const at::Tensor& tested, const at::Tensor& reference, const char* what) {
    EXPECT_LT(test_support::max_relative_error(tested.cpu().to(at::kDouble), reference.detach()), 1e-5)
        << what;
  };
  const std::vector<at::Tensor>& in = k.in;
  expect_close(fused_relative_logits(pairs, gpu(in[0]), gpu(in[1]), gpu(in[2]), gpu(in[3])), k.ref.logits,
               "logits");
  expect_close(fused_relative_values(pairs, gpu(in[6]), gpu(in[4]), gpu(in[5])), k.ref.values, "values");
  const std::vector<at::Tensor> dl =
      fused_relative_logits_backward(pairs, gpu(k.dlogits), gpu(in[0]), gpu(in[1]), gpu(in[2]), gpu(in[3]));
  const std::vector<at::Tensor> dv =
      fused_relative_values_backward(pairs, gpu(k.dout), gpu(in[6]), gpu(in[4]), gpu(in[5]));
  const char* names[] = {"query input", "query bank", "key input", "key bank"};
  for (size_t i = 0; i < 4; ++i) expect_close(dl[i], k.g[i], names[i]);
  expect_close(dv[0], k.g[6], "attention weights");
  expect_close(dv[1], k.g[4], "value input");
  expect_close(dv[2], k.g[5], "value bank");
}

TEST(CudaKernelArithmetic, KernelsOnCudaMatchThePerPairFormulas) {
  if (!fused_relative_kernels_built()) {
    // A build without them says so, whatever it is given.
    EXPECT_THROW(fused_relative_logits(FusedPairs{}, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()),
                 Error);
    GTEST_SKIP() << "the fused CUDA kernels are not in this build (a CUDA LibTorch and nvcc)";
  }
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  {
    SCOPED_TRACE("2x3 grid with CLS, every query");
    check_on_cuda(TokenLayout::grid(2, 3, true), 7);
  }
  {
    SCOPED_TRACE("2x3 grid with CLS, the CLS query alone");
    check_on_cuda(TokenLayout::grid(2, 3, true), 1);
  }
  SCOPED_TRACE("causal sequence of 5");
  check_on_cuda(TokenLayout::sequence(5, false, true), 5);
}

}  // namespace
}  // namespace translution
