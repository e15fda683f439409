#include "nn/relative_ops.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <initializer_list>
#include <map>
#include <mutex>
#include <type_traits>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/autograd.h>
#include <torch/csrc/autograd/graph_task.h>

#include "nn/bf16_gemm.h"
#include "nn/bf16_weights.h"
#include "nn/gather_rows.h"
#include "nn/pair_blocks.h"
#include "nn/pair_kernels.h"
#include "nn/pair_matrices.h"
#include "nn/raw_gemm.h"
#include "nn/row_gemm.h"
#include "util/error.h"
#include "util/helper_threads.h"

namespace translution {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

at::Tensor token_major(const at::Tensor& x) { return x.transpose(0, 1).contiguous(); }  // [B, N, ...] -> [N, B, ...]

// Whether the per-matrix loops below can hand raw memory to BLAS (raw_gemm.h).
bool raw_path(std::initializer_list<const at::Tensor*> tensors) {
  for (const at::Tensor* t : tensors)
    if (!raw_gemm_usable(*t) || t->scalar_type() != (*tensors.begin())->scalar_type()) return false;
  return true;
}

// S[rows of e] = X[rows of e] W[e] for every matrix: one GEMM each, M = B n_e. On
// the raw path each matrix's input rows are gathered into a scratch block the size
// of one GEMM's operand (cache-resident) instead of a gathered copy of all rows.
// w16: the bank's bfloat16 copy to read instead of it (project_rows finds it), or null.
at::Tensor project_sorted(const at::Tensor& xt_in, const at::Tensor& rows, const at::Tensor& bank,
                          const std::vector<int64_t>& offset, bool bf16, const Bf16Bits* w16) {
  const at::Tensor xt = xt_in.contiguous();
  const int64_t R = rows.size(0), B = xt.size(1), C = xt.size(2), D = bank.size(2);
  at::Tensor out = at::empty({R, B, D}, xt.options());
  at::Tensor out2 = out.view({R * B, D});
  if ((bf16 || w16 || raw_path({&xt, &bank, &out2})) && rows.is_cpu()) {  // bf16, w16: float CPU memory
    const int64_t block = most_rows(offset) * B;
    const int parts = bf16 ? bf16_gemm_parts() : matrix_parts(block, C, D);
    at::Tensor scratch = at::empty({parts, block, C}, xt.options());
    AT_DISPATCH_FLOATING_TYPES(xt.scalar_type(), "project_sorted", [&] {
      const scalar_t *xp = xt.data_ptr<scalar_t>(), *wp = bank.data_ptr<scalar_t>();
      scalar_t* op = out2.data_ptr<scalar_t>();
      const int64_t* rp = rows.data_ptr<int64_t>();
      // Matrices claimed four at a time as each core comes free (deterministic: each product is the
      // same whichever core computes it). The backward keeps fixed parts for its per-part sums.
      const size_t E = offset.size() - 1;
      for_each_claimed(E, parts, 4, [&](size_t e, size_t next, int part) {
        const int64_t n = offset[e + 1] - offset[e];
        if (n == 0) return;
        scalar_t* gp = scratch.data_ptr<scalar_t>() + part * block * C;
        gather_block(xp, rp, offset[e], offset[e + 1], B * C, gp);
        matrix_product<scalar_t>(n * B, C, D, gp, wp + int64_t(e) * C * D, op + offset[e] * B * D,
                                 next < E ? wp + int64_t(next) * C * D : nullptr, bf16,
                                 w16 ? w16 + int64_t(e) * C * D : nullptr,
                                 w16 && next < E ? w16 + int64_t(next) * C * D : nullptr);
      });
    });
    return out;
  }
  const at::Tensor g2 = gather_rows(xt, rows).view({R * B, C});
  for (size_t e = 0; e + 1 < offset.size(); ++e) {
    const int64_t n = offset[e + 1] - offset[e];
    if (n == 0) continue;
    at::Tensor chunk = out2.narrow(0, offset[e] * B, n * B);
    at::mm_out(chunk, g2.narrow(0, offset[e] * B, n * B), bank.select(0, int64_t(e)));
  }
  return out;
}

// [N, B, ...] gradient from per-row contributions.
at::Tensor scatter_rows(const at::Tensor& rows_grad, const at::Tensor& index, int64_t tokens) {
  std::vector<int64_t> sizes = rows_grad.sizes().vec();
  sizes[0] = tokens;
  return at::zeros(sizes, rows_grad.options()).index_add_(0, index, rows_grad);
}

// Given dS for sorted rows: the gradients of the bank and of X ([N, B, C]), per
// matrix. The raw path gathers and scatters one matrix's rows at a time, as above.
std::pair<at::Tensor, at::Tensor> project_sorted_backward(const at::Tensor& xt_in, const at::Tensor& rows,
                                                          const at::Tensor& bank, const std::vector<int64_t>& offset,
                                                          const at::Tensor& ds_in, bool bf16) {
  const at::Tensor xt = xt_in.contiguous();
  const int64_t N = xt.size(0), R = rows.size(0), B = xt.size(1), C = xt.size(2), D = bank.size(2);
  const at::Tensor ds2 = ds_in.reshape({R * B, D}).contiguous();
  // Every matrix with pairs is overwritten below; only the unused ones need zeros.
  at::Tensor dbank = bank_gradient_buffer(bank, offset);
  if ((bf16 || raw_path({&xt, &bank, &ds2, &dbank})) && rows.is_cpu()) {
    const int64_t block = most_rows(offset) * B;
    const int parts = bf16 ? bf16_gemm_parts() : matrix_parts(block, C, D);
    // Each part adds into its own input gradient; they are summed at the end.
    at::Tensor dxt = at::zeros({parts, N, B, C}, xt.options());
    at::Tensor scratch = at::empty({parts, 2, block, C}, xt.options());
    AT_DISPATCH_FLOATING_TYPES(xt.scalar_type(), "project_sorted_backward", [&] {
      const scalar_t *xp = xt.data_ptr<scalar_t>(), *wp = bank.data_ptr<scalar_t>(), *sp = ds2.data_ptr<scalar_t>();
      scalar_t* dwp = dbank.data_ptr<scalar_t>();
      const int64_t* rp = rows.data_ptr<int64_t>();
      const int64_t row_size = B * C;
      for_matrix_parts(offset, parts, [&](size_t first, size_t last, int part) {
        scalar_t* dxp = dxt.data_ptr<scalar_t>() + part * N * row_size;
        scalar_t *gp = scratch.data_ptr<scalar_t>() + part * 2 * block * C, *dgp = gp + block * C;
        for (size_t e = first; e < last; ++e) {
          const int64_t n = offset[e + 1] - offset[e], w = int64_t(e) * C * D;
          if (n == 0) continue;
          const scalar_t* ds_e = sp + offset[e] * B * D;
          gather_block(xp, rp, offset[e], offset[e + 1], row_size, gp);
          matrix_gradients<scalar_t>(n * B, C, D, gp, ds_e, wp + w, dwp + w, dgp, bf16);
          scatter_add_block(dgp, rp, offset[e], offset[e + 1], row_size, dxp);
        }
      });
    });
    return {parts == 1 ? dxt[0] : dxt.sum(0), dbank};
  }
  const at::Tensor g2 = gather_rows(xt, rows).view({R * B, C});
  at::Tensor dg = at::empty({R, B, C}, xt.options());
  at::Tensor dg2 = dg.view({R * B, C});
  for (size_t e = 0; e + 1 < offset.size(); ++e) {
    const int64_t n = offset[e + 1] - offset[e];
    if (n == 0) continue;
    const at::Tensor g_e = g2.narrow(0, offset[e] * B, n * B), ds_e = ds2.narrow(0, offset[e] * B, n * B);
    at::Tensor dw = dbank.select(0, int64_t(e)), dg_e = dg2.narrow(0, offset[e] * B, n * B);
    at::mm_out(dw, g_e.t(), ds_e);
    at::mm_out(dg_e, ds_e, bank.select(0, int64_t(e)).t());
  }
  return {scatter_rows(dg, rows, N), dbank};
}

// Algorithm choice. Per matrix GEMMs do the exact work but pay a call per matrix
// (E of them, 172 for a 7x7 grid). Through at::mm each call also pays for views
// and dispatch, so for tiny matrices (LoR's 24 x 24) at small batch every token
// is projected by every matrix in one GEMM and the needed rows are picked: about
// E/N = 3.4x the arithmetic, a few ops instead of hundreds. Straight to the BLAS
// (CPU, the default) per-matrix wins at every shape measured, batch 1 included
// (docs/benchmarks.md), so there it always runs. On a GPU each per-matrix product is
// a kernel launch of a few microseconds' work, so a step costs about the same at any
// batch, while the all-token product grows with the batch: on an H100, Translution
// ViT-A/12 classified one image in 4.3-4.6 ms against 61-67 ms per matrix, trained at
// batch 32 in 46-50 against 199-262 ms, but at batch 256 in 265-269 against 204-206
// ms (docs/benchmarks.md, "Session 18"). The all-token product runs there while its
// [N, B, E, D] intermediate is at most kAllTokenBytesOnGpu (Translution ViT-A/12: up
// to batch 162; LoR's at any batch measured).
std::atomic<ProjectionAlgorithm> g_algorithm{ProjectionAlgorithm::Auto};
std::atomic<bool> g_recompute{false};
constexpr int64_t kAllTokenBytesOnGpu = int64_t(1) << 30;

// The entry of every sorted row ([R] int64), on `device`. Made once per order and
// device: a copy from the host on every call would wait on the GPU's stream, and
// could not be captured in a CUDA graph (infer/graphed_forward.h). The cache is
// never destroyed, so no device tensor outlives the CUDA runtime at exit.
const at::Tensor& entry_of_rows(const std::vector<int64_t>& offset, const c10::Device& device) {
  static std::mutex lock;
  static auto* cache = new std::map<std::pair<std::vector<int64_t>, std::string>, at::Tensor>();
  const std::lock_guard<std::mutex> hold(lock);
  at::Tensor& entries = (*cache)[{offset, device.str()}];
  if (!entries.defined()) {
    std::vector<int64_t> entry;
    for (size_t e = 0; e + 1 < offset.size(); ++e) entry.insert(entry.end(), size_t(offset[e + 1] - offset[e]), int64_t(e));
    entries = at::tensor(entry, at::kLong).to(device);
  }
  return entries;
}

// Position of (row r, batch b) in the all-token projection [N, B, E, D] viewed as rows of D.
at::Tensor all_token_index(const at::Tensor& rows, const std::vector<int64_t>& offset, int64_t B) {
  const int64_t E = int64_t(offset.size()) - 1;
  const at::Tensor& entry_of_row = entry_of_rows(offset, rows.device());
  const at::Tensor b = at::arange(B, rows.options());
  return ((rows.unsqueeze(1) * B + b.unsqueeze(0)) * E + entry_of_row.unsqueeze(1)).reshape({-1});
}

// The bank's bfloat16 copy that a forward without gradients (copies) reads instead
// of it where one is in force (nn/bf16_weights.h), or null.
const Bf16Bits* weight_copy(const at::Tensor& bank, const at::Tensor& xt, bool bf16, bool copies) {
  return copies && !bf16 && xt.scalar_type() == at::kFloat ? bf16_weights_for(bank) : nullptr;
}

// x_row(r) W[entry(r)] for every sorted row r: [R, B, D]. xt: [N, B, C].
// copies: a forward without gradients, which reads the bank's bfloat16 copy where
// one is in force (nn/bf16_weights.h), per matrix whatever the algorithm; never a
// backward's recomputation.
at::Tensor project_rows(const at::Tensor& xt, const at::Tensor& rows, const at::Tensor& bank,
                        const std::vector<int64_t>& offset, bool bf16, bool copies) {
  const int64_t N = xt.size(0), B = xt.size(1), C = xt.size(2), E = bank.size(0), D = bank.size(2);
  const Bf16Bits* w16 = weight_copy(bank, xt, bf16, copies);
  if (projects_every_token(bank, N, B) && !w16) {
    const at::Tensor all = at::mm(xt.reshape({N * B, C}), bank.permute({1, 0, 2}).reshape({C, E * D}));
    return all.view({N * B * E, D}).index_select(0, all_token_index(rows, offset, B)).view({-1, B, D});
  }
  return project_sorted(xt, rows, bank, offset, bf16, w16);
}

// Gradients of project_rows: into the input ([N, B, C]) and the bank.
std::pair<at::Tensor, at::Tensor> project_rows_backward(const at::Tensor& xt, const at::Tensor& rows,
                                                        const at::Tensor& bank, const std::vector<int64_t>& offset,
                                                        const at::Tensor& ds, bool bf16) {
  const int64_t N = xt.size(0), B = xt.size(1), C = xt.size(2), E = bank.size(0), D = bank.size(2);
  if (projects_every_token(bank, N, B)) {
    const at::Tensor dall = at::zeros({N * B * E, D}, ds.options())
                                .index_add_(0, all_token_index(rows, offset, B), ds.reshape({-1, D}))
                                .view({N * B, E * D});
    const at::Tensor x2 = xt.reshape({N * B, C});
    const at::Tensor dbank = at::mm(x2.t(), dall).view({C, E, D}).permute({1, 0, 2}).contiguous();
    const at::Tensor dxt = at::mm(dall, bank.permute({1, 0, 2}).reshape({C, E * D}).t()).view({N, B, C});
    return {dxt, dbank};
  }
  return project_sorted_backward(xt, rows, bank, offset, ds, bf16);
}

// Saved pair rows may take their own gradients in place (no new [R, B, D] tensors
// at the backward peak: Translution training's resident peak 3245 -> 3101 MB)
// when nothing can read them again: recomputed, or this backward frees the graph
// and no backward of this node was ever recorded (create_graph: the recorded
// ops may hold the rows). With retain_graph a second backward reads them: intact.
bool rows_are_scratch(AutogradContext* ctx, bool recomputed) {
  if (at::GradMode::is_enabled()) ctx->saved_data["recorded"] = true;
  if (recomputed) return true;
  return !ctx->saved_data.count("recorded") && !torch::autograd::get_current_graph_task_keep_graph();
}

// Whether this forward records gradients in bf16 precision (nn/bf16_gemm.h), asked
// before the autograd function (inside it gradients are off); which banks then
// take bfloat16 products is bf16_bank's choice.
bool training_in_bf16(std::initializer_list<const at::Tensor*> inputs) {
  if (dense_precision() != DensePrecision::Bf16 || !at::GradMode::is_enabled() || !bf16_gemm_available()) return false;
  bool grad = false;
  for (const at::Tensor* t : inputs) {
    if (!t->defined() || t->numel() == 0) continue;  // an empty bank: a plain side
    if (!t->is_cpu() || t->scalar_type() != at::kFloat) return false;
    grad = grad || t->requires_grad();
  }
  return grad;
}

// Whether this forward may read bfloat16 copies of the banks (nn/bf16_weights.h):
// one without gradients, asked before the autograd function (inside it, and in
// every backward, gradients are off).
bool reads_weight_copies() { return !at::GradMode::is_enabled(); }

// Autograd functions take no undefined inputs: a plain side passes an empty bank.
bool has_bank(const at::Tensor& bank) { return bank.defined() && bank.numel() > 0; }
at::Tensor bank_or_empty(const at::Tensor& bank, const at::Tensor& like) {
  return bank.defined() ? bank : at::empty({0}, like.options());
}

// One side of the dot product for every sorted row: projected (relative) or gathered (plain).
at::Tensor side_rows(const at::Tensor& xt, const at::Tensor& bank, const at::Tensor& rows,
                     const std::vector<int64_t>& offset, bool bf16, bool copies) {
  return has_bank(bank) ? project_rows(xt, rows, bank, offset, bf16 && bf16_bank(bank), copies)
                        : gather_rows(xt, rows);
}

// Gradient of one side: into the input and the bank (relative) or just the vectors (plain).
std::pair<at::Tensor, at::Tensor> side_backward(const at::Tensor& xt, const at::Tensor& bank, const at::Tensor& rows,
                                                const std::vector<int64_t>& offset, const at::Tensor& ds, bool bf16) {
  if (!has_bank(bank)) return {scatter_rows(ds, rows, xt.size(0)).transpose(0, 1), at::Tensor()};
  auto [dxt, dbank] = project_rows_backward(xt, rows, bank, offset, ds, bf16 && bf16_bank(bank));
  return {dxt.transpose(0, 1), dbank};
}

// logits[b, h, i, j] = dots[r, b, h] where row r is the pair (i, j) (i < M queries,
// j < N keys); 0 where no row is (pairs a causal mask hides). On CPU one pass
// straight into [B, H, M, N] (contiguous, so the softmax after it runs in place of
// a copy); elsewhere an index_copy_ into [M N, B, H] and a permuted view of it.
bool plain_cpu(const at::Tensor& t, const at::Tensor& index) {
  return t.is_cpu() && t.is_contiguous() && (t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble) &&
         index.is_cpu() && index.is_contiguous() && index.scalar_type() == at::kLong;
}

at::Tensor pairs_to_grid(const at::Tensor& dots, const at::Tensor& pair_of_row, int64_t M, int64_t N) {
  const int64_t R = dots.size(0), B = dots.size(1), H = dots.size(2);
  if (!plain_cpu(dots, pair_of_row)) {
    at::Tensor full = at::zeros({M * N, B, H}, dots.options());
    full.index_copy_(0, pair_of_row, dots);
    return full.view({M, N, B, H}).permute({2, 3, 0, 1});
  }
  at::Tensor grid = R == M * N ? at::empty({B, H, M, N}, dots.options()) : at::zeros({B, H, M, N}, dots.options());
  const int64_t* pair = pair_of_row.data_ptr<int64_t>();
  AT_DISPATCH_FLOATING_TYPES(dots.scalar_type(), "pairs_to_grid", [&] {
    const scalar_t* d = dots.data_ptr<scalar_t>();
    scalar_t* g = grid.data_ptr<scalar_t>();
    for (int64_t r = 0; r < R; ++r)
      for (int64_t bh = 0; bh < B * H; ++bh) g[bh * M * N + pair[r]] = d[r * B * H + bh];
  });
  return grid;
}

// The reverse: rows[r, b, h] = alpha[b, h, i, j] for the pair (i, j) of row r.
at::Tensor grid_to_pairs(const at::Tensor& alpha, const at::Tensor& pair_of_row) {
  const int64_t B = alpha.size(0), H = alpha.size(1), M = alpha.size(2), N = alpha.size(3), R = pair_of_row.size(0);
  if (!plain_cpu(alpha, pair_of_row))
    return gather_rows(alpha.permute({2, 3, 0, 1}).reshape({M * N, B, H}), pair_of_row);
  at::Tensor rows = at::empty({R, B, H}, alpha.options());
  const int64_t* pair = pair_of_row.data_ptr<int64_t>();
  AT_DISPATCH_FLOATING_TYPES(alpha.scalar_type(), "grid_to_pairs", [&] {
    const scalar_t* a = alpha.data_ptr<scalar_t>();
    scalar_t* o = rows.data_ptr<scalar_t>();
    for (int64_t r = 0; r < R; ++r)
      for (int64_t bh = 0; bh < B * H; ++bh) o[r * B * H + bh] = a[bh * M * N + pair[r]];
  });
  return rows;
}

// The blocked path's view of an order (nn/pair_blocks.h); the index tensors outlive it.
PairTable pair_table(const std::vector<int64_t>& offset, const at::Tensor& pair_of_row, const at::Tensor& query_of_row,
                     const at::Tensor& source_of_row, int64_t queries, int64_t tokens) {
  PairTable t;
  t.offset = &offset;
  t.pair = pair_of_row.data_ptr<int64_t>();
  t.query = query_of_row.data_ptr<int64_t>();
  t.source = source_of_row.data_ptr<int64_t>();
  t.queries = queries;
  t.tokens = tokens;
  return t;
}

bool blocks_apply(std::initializer_list<const at::Tensor*> tensors, const at::Tensor& pair_of_row) {
  return pair_of_row.is_cpu() && pair_blocks_apply(tensors);
}

// One side for the blocked path: bf16 products where the bank takes them, and its
// bfloat16 copy in a forward without gradients (as project_rows reads them).
PairSide pair_side(const at::Tensor& xt, const at::Tensor& bank, const at::Tensor& rows, bool bf16, bool copies,
                   const at::Tensor& saved = at::Tensor()) {
  PairSide s;
  s.xt = xt;
  s.bank = has_bank(bank) ? bank : at::Tensor();
  s.rows = rows.data_ptr<int64_t>();
  s.bf16 = s.relative() && bf16 && bf16_bank(bank);
  if (s.relative()) s.w16 = weight_copy(bank, xt, s.bf16, copies);
  s.saved = saved;
  return s;
}

class RelativeLogits : public torch::autograd::Function<RelativeLogits> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q_input, const at::Tensor& q_bank,
                            const at::Tensor& k_input, const at::Tensor& k_bank, const at::Tensor& pair_of_row,
                            const at::Tensor& query_of_row, const at::Tensor& source_of_row,
                            const std::vector<int64_t>& offset, int64_t heads, int64_t queries, bool bf16,
                            bool copies) {
    const at::Tensor qt = token_major(q_input), kt = token_major(k_input);
    ctx->saved_data["offset"] = offset;
    ctx->saved_data["bf16"] = bf16;
    if (blocks_apply({&qt, &q_bank, &kt, &k_bank}, pair_of_row)) {
      const PairTable table = pair_table(offset, pair_of_row, query_of_row, source_of_row, queries, kt.size(0));
      PairSide q = pair_side(qt, q_bank, query_of_row, bf16, copies), k = pair_side(kt, k_bank, source_of_row, bf16, copies);
      // Copies are read only where no gradient is recorded: then nothing needs the rows.
      const at::Tensor grid = blocked_logits(table, q, k, heads, !copies && !g_recompute.load());
      ctx->save_for_backward({qt, q_bank, kt, k_bank, pair_of_row, query_of_row, source_of_row, q.saved, k.saved});
      ctx->saved_data["blocked"] = true;
      return grid;
    }
    const at::Tensor sq = side_rows(qt, q_bank, query_of_row, offset, bf16, copies);   // [R, B, D]
    const at::Tensor sk = side_rows(kt, k_bank, source_of_row, offset, bf16, copies);  // [R, B, D]
    const at::Tensor dots = pair_dots(sq, sk, heads);  // [R, B, H]
    const bool keep = !g_recompute.load();
    ctx->save_for_backward({qt, q_bank, kt, k_bank, pair_of_row, query_of_row, source_of_row,
                            keep ? sq : at::Tensor(), keep ? sk : at::Tensor()});
    return pairs_to_grid(dots, pair_of_row, queries, kt.size(0));
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = ctx->get_saved_variables();
    const at::Tensor &qt = s[0], &q_bank = s[1], &kt = s[2], &k_bank = s[3], &pair_of_row = s[4];
    const at::Tensor &query_of_row = s[5], &source_of_row = s[6];
    const std::vector<int64_t> offset = ctx->saved_data["offset"].toIntVector();
    const bool bf16 = ctx->saved_data["bf16"].toBool();
    if (ctx->saved_data.count("blocked")) {
      const PairTable table = pair_table(offset, pair_of_row, query_of_row, source_of_row, grads[0].size(2), kt.size(0));
      const PairSide q = pair_side(qt, q_bank, query_of_row, bf16, false, s[7]);
      const PairSide k = pair_side(kt, k_bank, source_of_row, bf16, false, s[8]);
      auto [dqt, dq_bank, dkt, dk_bank] = blocked_logits_backward(table, q, k, grads[0]);
      return {dqt.transpose(0, 1), dq_bank, dkt.transpose(0, 1), dk_bank, at::Tensor(), at::Tensor(), at::Tensor(),
              at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    }
    const at::Tensor sq = s[7].defined() ? s[7] : side_rows(qt, q_bank, query_of_row, offset, bf16, false);
    const at::Tensor sk = s[8].defined() ? s[8] : side_rows(kt, k_bank, source_of_row, offset, bf16, false);
    const int64_t B = sq.size(1), H = grads[0].size(1), M = grads[0].size(2), N = grads[0].size(3);
    const at::Tensor dfull = grads[0].permute({2, 3, 0, 1}).reshape({M * N, B, H});
    const bool scratch = rows_are_scratch(ctx, !s[7].defined() && !s[8].defined());
    auto [dsq, dsk] = pair_dots_backward(sq, sk, gather_rows(dfull, pair_of_row), scratch);
    auto [dq, dq_bank] = side_backward(qt, q_bank, query_of_row, offset, dsq, bf16);
    auto [dk, dk_bank] = side_backward(kt, k_bank, source_of_row, offset, dsk, bf16);
    return {dq, dq_bank, dk, dk_bank, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

class RelativeValues : public torch::autograd::Function<RelativeValues> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& alpha, const at::Tensor& input,
                            const at::Tensor& bank, const at::Tensor& pair_of_row, const at::Tensor& query_of_row,
                            const at::Tensor& source_of_row, const std::vector<int64_t>& offset, bool head_sliced,
                            bool bf16, bool copies) {
    const int64_t B = alpha.size(0), M = alpha.size(2);  // M queries
    const at::Tensor xt = token_major(input);
    ctx->saved_data["offset"] = offset;
    ctx->saved_data["head_sliced"] = head_sliced;
    if (blocks_apply({&alpha, &xt, &bank}, pair_of_row)) {
      const PairTable table = pair_table(offset, pair_of_row, query_of_row, source_of_row, M, xt.size(0));
      PairSide v = pair_side(xt, bank, source_of_row, bf16, copies);
      at::Tensor alpha_planes;  // for backward, where one may run
      const at::Tensor out = blocked_values(table, alpha, v, head_sliced, !copies && !g_recompute.load(),
                                            copies ? nullptr : &alpha_planes);
      ctx->save_for_backward({xt, bank, v.saved, alpha_planes, pair_of_row, query_of_row, source_of_row});
      ctx->saved_data["bf16"] = v.bf16;
      ctx->saved_data["blocked"] = true;
      return head_sliced ? out.view({M, B, bank.size(2)}).transpose(0, 1) : out.transpose(0, 1);
    }
    bf16 = bf16 && bf16_bank(bank);
    const at::Tensor v = project_rows(xt, source_of_row, bank, offset, bf16, copies);  // [R, B, D]
    const int64_t D = v.size(2);
    const at::Tensor a = grid_to_pairs(alpha, pair_of_row);  // [R, B, H]
    const at::Tensor out = scatter_weighted(a, v, query_of_row, M, head_sliced);  // [M, B, H, *]
    ctx->save_for_backward({xt, bank, g_recompute.load() ? at::Tensor() : v, a, pair_of_row, query_of_row,
                            source_of_row});
    ctx->saved_data["bf16"] = bf16;
    return head_sliced ? out.view({M, B, D}).transpose(0, 1) : out.transpose(0, 1);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = ctx->get_saved_variables();
    const at::Tensor &xt = s[0], &bank = s[1], &a = s[3], &pair_of_row = s[4], &query_of_row = s[5],
                     &source_of_row = s[6];
    const std::vector<int64_t> offset = ctx->saved_data["offset"].toIntVector();
    const bool bf16 = ctx->saved_data["bf16"].toBool();
    const bool head_sliced = ctx->saved_data["head_sliced"].toBool();
    if (ctx->saved_data.count("blocked")) {  // s[3] is alpha's pair-ordered planes [B H, R]
      const at::Tensor& alpha = s[3];
      const int64_t M = grads[0].size(1), B = grads[0].size(0), D = bank.size(2), H = alpha.size(0) / B;
      const PairTable table = pair_table(offset, pair_of_row, query_of_row, source_of_row, M, xt.size(0));
      const PairSide v = pair_side(xt, bank, source_of_row, bf16, false, s[2]);
      const at::Tensor dout = head_sliced ? grads[0].transpose(0, 1).reshape({M, B, H, D / H}) : grads[0].transpose(0, 1);
      auto [dalpha, dxt, dbank] = blocked_values_backward(table, alpha, v, dout, head_sliced);
      return {dalpha, dxt.transpose(0, 1), dbank, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(),
              at::Tensor(), at::Tensor()};
    }
    const at::Tensor v = s[2].defined() ? s[2] : project_rows(xt, source_of_row, bank, offset, bf16, false);
    const int64_t B = v.size(1), D = v.size(2), H = a.size(2), M = grads[0].size(1), N = xt.size(0);
    // Gradient reaching each pair row from its query's output.
    const at::Tensor dout_t = head_sliced ? grads[0].transpose(0, 1).reshape({M, B, H, D / H})
                                          : grads[0].transpose(0, 1);  // [M, B, H, *]
    auto [da, dv] = scatter_weighted_backward(dout_t, a, v, query_of_row, head_sliced,
                                                 rows_are_scratch(ctx, !s[2].defined()));
    at::Tensor dalpha_full = at::zeros({M * N, B, H}, da.options());
    dalpha_full.index_copy_(0, pair_of_row, da);
    auto [dxt, dbank] = project_rows_backward(xt, source_of_row, bank, offset, dv, bf16);
    const at::Tensor dinput = dxt.transpose(0, 1);
    return {dalpha_full.view({M, N, B, H}).permute({2, 3, 0, 1}), dinput, dbank, at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

// The choice explained above g_algorithm.
bool projects_every_token(const at::Tensor& bank, int64_t tokens, int64_t batch) {
  switch (g_algorithm.load()) {
    case ProjectionAlgorithm::PerMatrix: return false;
    case ProjectionAlgorithm::AllTokens: return true;
    case ProjectionAlgorithm::Auto: break;
  }
  if (bank.is_cuda())
    return tokens * batch * bank.size(0) * bank.size(2) * int64_t(bank.element_size()) <= kAllTokenBytesOnGpu;
  if (raw_gemm_usable(bank)) return false;
  return bank.size(1) * bank.size(2) <= 64 * 64 && batch <= 8;
}

void set_projection_algorithm(ProjectionAlgorithm algorithm) { g_algorithm = algorithm; }
void set_recompute_pair_rows(bool recompute) { g_recompute = recompute; }
bool recompute_pair_rows() { return g_recompute; }
ProjectionAlgorithm projection_algorithm() { return g_algorithm; }

ProjectionAlgorithm parse_projection_algorithm(const std::string& name) {
  if (name == "auto") return ProjectionAlgorithm::Auto;
  if (name == "per-matrix") return ProjectionAlgorithm::PerMatrix;
  if (name == "all-tokens") return ProjectionAlgorithm::AllTokens;
  throw Error("unknown algorithm '" + name + "' (expected auto, per-matrix or all-tokens)");
}

PairOrder PairOrder::to(const c10::Device& device) const {
  PairOrder o = *this;
  o.pair_of_row = pair_of_row.to(device);
  o.query_of_row = query_of_row.to(device);
  o.source_of_row = source_of_row.to(device);
  return o;
}

PairOrder make_pair_order(const RelativeTable& table, int64_t queries) {
  PairOrder order;
  const int64_t N = table.tokens(), E = table.entries;
  if (queries < 0) queries = N;
  if (queries == 0 || queries > N)
    throw Error("internal: pair order for " + std::to_string(queries) + " queries of " + std::to_string(N) + " tokens");
  order.tokens = N;
  order.queries = queries;
  auto entry = table.entry.accessor<int64_t, 2>();
  auto visible = table.valid.accessor<bool, 2>();
  std::vector<std::vector<int64_t>> pairs_of(static_cast<size_t>(E));  // counting sort by entry
  for (int64_t i = 0; i < queries; ++i)
    for (int64_t j = 0; j < N; ++j) {
      if (!visible[i][j]) continue;
      const int64_t e = entry[i][j];
      if (e < 0 || e >= E) throw Error("internal: pair entry " + std::to_string(e) + " out of range");
      pairs_of[size_t(e)].push_back(i * N + j);
    }
  std::vector<int64_t> pairs, query_ids, sources;
  order.entry_offset.push_back(0);
  for (const auto& list : pairs_of) {
    for (int64_t p : list) {
      pairs.push_back(p);
      query_ids.push_back(p / N);
      sources.push_back(p % N);
    }
    order.entry_offset.push_back(int64_t(pairs.size()));
  }
  order.pair_of_row = at::tensor(pairs, at::kLong);
  order.query_of_row = at::tensor(query_ids, at::kLong);
  order.source_of_row = at::tensor(sources, at::kLong);
  return order;
}

PairOrders::PairOrders(const RelativeTable& table) {
  orders_[table.tokens()] = make_pair_order(table);
  orders_[1] = make_pair_order(table, 1);
}

const PairOrder& PairOrders::get(const RelativeTable& table, int64_t queries, const c10::Device& device) {
  const std::lock_guard<std::mutex> hold(lock_);
  auto found = orders_.find(queries);
  if (found == orders_.end()) found = orders_.emplace(queries, make_pair_order(table, queries)).first;
  if (found->second.pair_of_row.device() != device) found->second = found->second.to(device);
  return found->second;
}

at::Tensor relative_logits(const PairOrder& o, const at::Tensor& q_input, const at::Tensor& q_bank,
                           const at::Tensor& k_input, const at::Tensor& k_bank, int64_t heads) {
  return RelativeLogits::apply(q_input, bank_or_empty(q_bank, q_input), k_input, bank_or_empty(k_bank, k_input),
                               o.pair_of_row, o.query_of_row, o.source_of_row, o.entry_offset, heads, o.queries,
                               training_in_bf16({&q_input, &q_bank, &k_input, &k_bank}), reads_weight_copies());
}

at::Tensor relative_values(const PairOrder& o, const at::Tensor& alpha, const at::Tensor& input,
                           const at::Tensor& bank, bool head_sliced) {
  return RelativeValues::apply(alpha, input, bank, o.pair_of_row, o.query_of_row, o.source_of_row, o.entry_offset,
                               head_sliced, training_in_bf16({&alpha, &input, &bank}), reads_weight_copies());
}

}  // namespace translution
