// The CUDA kernels' arithmetic (core/cuda/relative_pairs.h), run on the CPU over small
// shapes against the per-pair formulas in ATen, double precision: every logit, value
// element and element of every input's gradient (autograd's, through the formulas),
// on a grid with CLS and on a causal sequence (hidden pairs).
#include "cuda/relative_pairs.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

#include "nn/token_layout.h"

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

void check_layout(const TokenLayout& layout, int64_t queries) {
  const Pairs p = pairs_of(layout, queries, 5, 2, 3);
  const RelativeShape& s = p.shape;
  const int64_t B = s.batch, N = s.tokens, M = s.queries, C = s.dim, D = s.width(), E = p.entries;
  at::manual_seed(3);
  const auto f64 = at::TensorOptions().dtype(at::kDouble);
  // xq, wq, xk, wk, xv, wv, alpha
  std::vector<at::Tensor> in = {at::randn({B, N, C}, f64),        at::randn({E, C, D}, f64),
                                at::randn({B, N, C}, f64),        at::randn({E, C, D}, f64),
                                at::randn({B, N, C}, f64),        at::randn({E, C, D}, f64),
                                at::rand({B, s.heads, M, N}, f64)};
  for (auto& t : in) t.requires_grad_(true);
  const Reference ref = per_pair(p, in);
  const at::Tensor dlogits = at::randn({B, s.heads, M, N}, f64), dout = at::randn({B, M, D}, f64);
  const auto g = torch::autograd::grad({(ref.logits * dlogits).sum() + (ref.values * dout).sum()}, in);

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

}  // namespace
}  // namespace translution
