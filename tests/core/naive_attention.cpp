#include "naive_attention.h"

#include <cmath>
#include <limits>

#include <ATen/ATen.h>

namespace translution::test_support {
namespace {

struct Pos {
  bool cls;
  int64_t y, x;
};

Pos pos(const TokenLayout& l, int64_t t) {
  if (l.cls && t == 0) return {true, 0, 0};
  const int64_t p = t - (l.cls ? 1 : 0);
  return {false, p / l.width, p % l.width};
}

// ICLR Eq. 1 and Appendix H: the matrix for query i and source j, in the bank's
// order: offsets (dy, dx) row-major over [-(H-1), H-1] x [-(W-1), W-1], then CLS
// itself, CLS in (CLS gathers from an image token), CLS out (an image token gathers
// from CLS). Written independently of core's RelativeTable.
int64_t paper_entry(const TokenLayout& l, int64_t i, int64_t j) {
  const Pos a = pos(l, i), b = pos(l, j);
  const int64_t rows = 2 * l.height - 1, cols = 2 * l.width - 1;
  if (a.cls && b.cls) return rows * cols;
  if (a.cls) return rows * cols + 1;
  if (b.cls) return rows * cols + 2;
  return (a.y - b.y + l.height - 1) * cols + (a.x - b.x + l.width - 1);
}

// Entries for q_ij, k_ji and v_ij of pair (i, j) in the banks as stored. The key
// bank is stored mirrored: the paper's k_ji = f_j Wk[-delta_ij] = f_j Wk[delta_ji]
// is the stored matrix at delta_ij (and CLS in/out swap). This reference checks
// the arithmetic; tests/core/relative_table_test.cpp checks the mirroring itself.
// Appendix C, with a CLS token that reads the sequence (nn/token_layout.h): offsets
// delta = i - j >= 0 of the positions, then CLS itself, into CLS, out of CLS.
int64_t causal_entry(const TokenLayout& l, int64_t i, int64_t j) {
  if (!l.cls) return j <= i ? i - j : 0;
  const int64_t L = l.positions();
  if (i == 0) return j == 0 ? L : L + 1;
  if (j == 0) return L + 2;
  return j <= i ? i - j : 0;
}

// Whether query i sees source j: causal positions see earlier positions, never CLS.
bool hidden(const TokenLayout& l, int64_t i, int64_t j) {
  if (!l.causal) return false;
  if (l.cls && i == 0) return false;
  return (l.cls && j == 0) || j > i;
}

struct PairEntries {
  int64_t q, k, v;
};

PairEntries entries(const TokenLayout& l, PairEncoding enc, int64_t i, int64_t j) {
  const int64_t N = l.tokens();
  if (enc == PairEncoding::Absolute) return {i * N + j, i * N + j, i * N + j};  // each pair its own matrices
  if (l.causal) {  // Appendix C: delta = i - j >= 0
    const int64_t e = causal_entry(l, i, j);
    return {e, e, e};
  }
  const int64_t e = paper_entry(l, i, j);
  return {e, e, e};
}

// RoPE (RoFormer), 2-D: dimension pair k of a head turns by x * theta_k for the
// first half of the pairs and y * theta_k for the second; 1-D: all pairs by x.
// theta_k = 10000^(-k / pairs_per_axis). The CLS token is not rotated.
at::Tensor rotate_naive(const at::Tensor& vec, const TokenLayout& l, int64_t token, int64_t heads) {
  const Pos p = pos(l, token);
  if (p.cls) return vec;
  const int64_t dh = vec.size(0) / heads, pairs = dh / 2;
  const bool two_d = l.kind == TokenLayout::Kind::Grid2D;
  const int64_t per_axis = two_d ? pairs / 2 : pairs;
  std::vector<at::Tensor> out;
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t k = 0; k < pairs; ++k) {
      const int64_t axis_k = k % per_axis;
      const double angle =
          double(two_d && k >= per_axis ? p.y : p.x) * std::pow(10000.0, -double(axis_k) / double(per_axis));
      const at::Tensor a = vec[h * dh + 2 * k], b = vec[h * dh + 2 * k + 1];
      out.push_back(a * std::cos(angle) - b * std::sin(angle));
      out.push_back(a * std::sin(angle) + b * std::cos(angle));
    }
  return at::stack(out);
}

at::Tensor param(const torch::nn::Module& m, const std::string& name) {
  for (const auto& p : m.named_parameters(true))
    if (p.key() == name) return p.value();
  return {};
}

at::Tensor row_times(const at::Tensor& f_row, const at::Tensor& matrix) { return at::matmul(f_row, matrix); }

}  // namespace

namespace {

at::Tensor naive_forward(const AttentionModule& module, const AttentionSpec& spec,
                         const AttentionShape& shape, const TokenLayout& layout, const at::Tensor& x,
                         const NaiveKnockout* knockout) {
  const int64_t B = x.size(0), N = x.size(1), H = shape.heads, dh = shape.head_dim;
  const double scale = 1.0 / std::sqrt(double(dh));
  const bool translution = spec.method == AttentionMethod::Translution;
  const bool lor = spec.method == AttentionMethod::LoRTranslution;
  const AttentionMethod m = spec.method;
  const bool positional = !translution && !lor && m != AttentionMethod::SelfAttention;
  const char* names[3] = {"q", "k", "v"};
  const bool rel[3] = {spec.relative() && spec.rel_q, spec.relative() && spec.rel_k,
                       spec.relative() && spec.rel_v};

  // Shared (position-free) projections as C x C' matrices, where the operator has them.
  at::Tensor shared[3];
  if (spec.method == AttentionMethod::SelfAttention || positional) {
    const auto w = param(module, "to_qkv.weight").t().chunk(3, 1);
    for (int r = 0; r < 3; ++r) shared[r] = w[r];
  } else {
    for (int r = 0; r < 3; ++r)
      if ((translution && !rel[r]) || (lor && spec.lor_shared))
        shared[r] = param(module, std::string("to_") + names[r] + ".weight").t();
  }

  std::vector<at::Tensor> outputs;
  for (int64_t b = 0; b < B; ++b) {
    const at::Tensor f = x[b];
    std::vector<at::Tensor> out_rows;
    for (int64_t i = 0; i < N; ++i) {
      std::vector<at::Tensor> logits(static_cast<size_t>(N * H));
      std::vector<at::Tensor> position_logits(static_cast<size_t>(N * H));  // GPSA
      std::vector<at::Tensor> values(static_cast<size_t>(N));
      std::vector<at::Tensor> low_values(static_cast<size_t>(N));  // LoR value slices: f_j W1v Wv[d], C2 H
      for (int64_t j = 0; j < N; ++j) {
        const PairEntries e = entries(layout, spec.encoding, i, j);
        // Role r's relative matrix for this pair: the stored one, or the knockout's
        // replacement where the pair's matrix is knocked out. q and v read the
        // paper's W[delta_ij]; k reads Wk[-delta_ij], the paper's entry of (j, i).
        const auto bank_matrix = [&](int role, int64_t stored) {
          if (knockout &&
              knockout->knocked(role, role == 1 ? paper_entry(layout, j, i) : paper_entry(layout, i, j)))
            return knockout->replacement[role];
          return param(module, std::string("w") + names[role]).select(0, stored);
        };
        at::Tensor a = at::zeros({H}, x.options());  // per-head logit
        at::Tensor v;
        if (translution) {
          at::Tensor q = rel[0] ? row_times(f[i], bank_matrix(0, e.q)) : row_times(f[i], shared[0]);
          at::Tensor k = rel[1] ? row_times(f[j], bank_matrix(1, e.k)) : row_times(f[j], shared[1]);
          if (spec.rotary) {  // RoPE-Translution
            q = rotate_naive(q, layout, i, H);
            k = rotate_naive(k, layout, j, H);
          }
          a = (q.view({H, dh}) * k.view({H, dh})).sum(-1);
          v = rel[2] ? row_times(f[j], bank_matrix(2, e.v)) : row_times(f[j], shared[2]);
        } else if (lor) {
          const int64_t c2 = spec.lor_c2;
          if (spec.lor_shared) {
            at::Tensor q = row_times(f[i], shared[0]), k = row_times(f[j], shared[1]);
            if (spec.rotary) {  // LoR-RoPE
              q = rotate_naive(q, layout, i, H);
              k = rotate_naive(k, layout, j, H);
            }
            a = a + (q.view({H, dh}) * k.view({H, dh})).sum(-1);
          }
          if (rel[0] || rel[1]) {
            const at::Tensor q2 =
                rel[0] ? row_times(row_times(f[i], param(module, "q_down.weight").t()), bank_matrix(0, e.q))
                       : row_times(f[i], param(module, "q_low.weight").t());
            const at::Tensor k2 =
                rel[1] ? row_times(row_times(f[j], param(module, "k_down.weight").t()), bank_matrix(1, e.k))
                       : row_times(f[j], param(module, "k_low.weight").t());
            a = a + (q2.view({H, c2}) * k2.view({H, c2})).sum(-1);
          }
          // v_ij = f_j (W1v Wv[d] W2v + Wv), formed per pair as the equation reads.
          // With value slices the relative part stays low-rank until the heads are summed (below).
          at::Tensor w = at::zeros({shape.dim, shape.inner()}, x.options());
          if (rel[2] && spec.lor_value_slices)
            low_values[size_t(j)] =
                at::matmul(row_times(f[j], param(module, "v_down.weight").t()), bank_matrix(2, e.v));
          else if (rel[2])
            w = w + at::matmul(at::matmul(param(module, "v_down.weight").t(), bank_matrix(2, e.v)),
                               param(module, "v_up"));
          if (spec.lor_shared) w = w + shared[2];
          v = row_times(f[j], w);
        } else if (positional) {
          at::Tensor q = row_times(f[i], shared[0]), k = row_times(f[j], shared[1]);
          v = row_times(f[j], shared[2]);
          const int64_t e_ij = layout.causal ? causal_entry(layout, i, j) : paper_entry(layout, i, j);
          if (m == AttentionMethod::Rotary) {
            q = rotate_naive(q, layout, i, H);
            k = rotate_naive(k, layout, j, H);
          }
          if (m == AttentionMethod::RelativeKeyVector) k = k + param(module, "rel")[e_ij];
          if (m == AttentionMethod::RelativeValueVector) v = v + param(module, "rel")[e_ij];
          a = (q.view({H, dh}) * k.view({H, dh})).sum(-1);
          if (m == AttentionMethod::RelativeBias)
            a = a + param(module, "rel").select(1, e_ij) / scale;  // bias is not scaled
          if (m == AttentionMethod::GatedPositional) {
            const Pos pi = pos(layout, i), pj = pos(layout, j);
            double dx = 0, dy = 0, d2 = 0;
            if (!pi.cls && !pj.cls) {
              dx = double(pi.x - pj.x);
              dy = double(pi.y - pj.y);
              d2 = dx * dx + dy * dy;
            }
            const at::Tensor r = at::tensor({dx, dy, d2}, x.options());
            const at::Tensor w = param(module, "gpsa_w");
            for (int64_t h = 0; h < H; ++h) position_logits[size_t(j * H + h)] = (w[h] * r).sum();
          }
        } else {
          a = (row_times(f[i], shared[0]).view({H, dh}) * row_times(f[j], shared[1]).view({H, dh})).sum(-1);
          v = row_times(f[j], shared[2]);
        }
        const bool masked = hidden(layout, i, j);
        for (int64_t h = 0; h < H; ++h)
          logits[size_t(j * H + h)] =
              masked ? at::full({}, -std::numeric_limits<double>::infinity(), x.options()) : a[h] * scale;
        values[size_t(j)] = v;
      }
      std::vector<at::Tensor> head_outputs;
      at::Tensor sliced = at::zeros({shape.inner()}, x.options());  // LoR value slices through W2v
      for (int64_t h = 0; h < H; ++h) {
        std::vector<at::Tensor> row;
        for (int64_t j = 0; j < N; ++j) row.push_back(logits[size_t(j * H + h)]);
        at::Tensor alpha = at::softmax(at::stack(row), 0);
        if (m == AttentionMethod::GatedPositional) {
          std::vector<at::Tensor> prow;
          for (int64_t j = 0; j < N; ++j)
            prow.push_back(hidden(layout, i, j)
                               ? at::full({}, -std::numeric_limits<double>::infinity(), x.options())
                               : position_logits[size_t(j * H + h)]);
          const at::Tensor beta = at::softmax(at::stack(prow), 0);
          const at::Tensor gate = at::sigmoid(param(module, "gpsa_gate")[h]);
          const at::Tensor mixed = (1 - gate) * alpha + gate * beta;
          alpha = mixed / mixed.sum();
        }
        at::Tensor acc = at::zeros({dh}, x.options());
        for (int64_t j = 0; j < N; ++j) acc = acc + alpha[j] * values[size_t(j)].narrow(0, h * dh, dh);
        head_outputs.push_back(acc);
        const int64_t c2 = spec.lor_c2;
        for (int64_t j = 0; j < N; ++j)
          if (low_values[size_t(j)]
                  .defined())  // head h's slice of the low-rank value, through W2v's rows for it
            sliced = sliced + alpha[j] * at::matmul(low_values[size_t(j)].narrow(0, h * c2, c2),
                                                    param(module, "v_up").narrow(0, h * c2, c2));
      }
      out_rows.push_back(at::cat(head_outputs) + sliced);
    }
    outputs.push_back(at::stack(out_rows));
  }
  at::Tensor out = at::stack(outputs);
  const at::Tensor w_out = param(module, "to_out.weight");
  if (w_out.defined()) out = at::matmul(out, w_out.t()) + param(module, "to_out.bias");
  return out;
}

}  // namespace

at::Tensor naive_attention(const AttentionModule& module, const AttentionSpec& spec,
                           const AttentionShape& shape, const TokenLayout& layout, const at::Tensor& x) {
  return naive_forward(module, spec, shape, layout, x, nullptr);
}

at::Tensor naive_attention(const AttentionModule& module, const AttentionSpec& spec,
                           const AttentionShape& shape, const TokenLayout& layout, const at::Tensor& x,
                           const NaiveKnockout& knockout) {
  if (layout.causal || spec.encoding != PairEncoding::Relative)
    throw std::invalid_argument("the knockout reference reads offsets of a grid or a non-causal sequence");
  return naive_forward(module, spec, shape, layout, x, &knockout);
}

}  // namespace translution::test_support
