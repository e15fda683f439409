#include "cpu/projection_algorithms.h"

#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "cpu/kernel_observer.h"
#include "cpu/offset_buckets.h"
#include "cpu/pair_projection.h"
#include "util/built_once.h"

namespace translution {
namespace {

// The entry of every sorted row ([R] int64), on `device`, made once per order and
// device (util/built_once.h says why). The values are never destroyed, so no device
// tensor outlives the CUDA runtime at exit.
const at::Tensor& entry_of_rows(const std::vector<int64_t>& offset, const c10::Device& device) {
  static auto* made = new BuiltOnce<std::pair<std::vector<int64_t>, c10::Device>, at::Tensor>();
  return made->get({offset, device}, [&] {
    std::vector<int64_t> entry;
    for (size_t e = 0; e + 1 < offset.size(); ++e)
      entry.insert(entry.end(), size_t(offset[e + 1] - offset[e]), int64_t(e));
    return at::tensor(entry, at::kLong).to(device);
  });
}

// Where (row r, image b) stands in an all-token product viewed as rows of D, in as few
// operators as it takes (each a kernel on a GPU; for one image, the studio's, one).
// Entry-major, [E, N, B, D] (forward): (entry[r] N + rows[r]) B + b.
at::Tensor entry_major_index(const at::Tensor& rows, const std::vector<int64_t>& offset, int64_t N,
                             int64_t B) {
  const at::Tensor row = at::add(rows, entry_of_rows(offset, rows.device()), N);  // entry N + token: [R]
  if (B == 1) return row;
  return at::add(at::arange(B, rows.options()).unsqueeze(0), row.unsqueeze(1), B).reshape({-1});
}

// Token-major, [N, B, E, D] (backward): (rows[r] B + b) E + entry[r].
at::Tensor token_major_index(const at::Tensor& rows, const std::vector<int64_t>& offset, int64_t B) {
  const int64_t E = int64_t(offset.size()) - 1;
  const at::Tensor first = at::add(entry_of_rows(offset, rows.device()), rows, B * E);  // b = 0: [R]
  if (B == 1) return first;
  return (first.unsqueeze(1) + at::arange(0, B * E, E, rows.options()).unsqueeze(0)).reshape({-1});
}

// A bucket's slots of a [P, B, F] slot tensor as its batch of products: [E_b, n_b B, F].
at::Tensor bucket_view(const at::Tensor& slots, const OffsetBucket& k) {
  return slots.narrow(0, k.first_slot, k.slots()).view({k.entries, -1, slots.size(2)});
}

// S[rows] = X[rows] W[entry], offset-batched (cpu/offset_buckets.h): the slots' inputs
// gathered once, the bank's matrices once in bucket order, one batched product per
// bucket into its slots, and the real rows picked back. tokens: [P], the token of
// each slot (a padding slot reads row 0's; its result is never picked).
at::Tensor project_offset_batched(const at::Tensor& xt, const at::Tensor& rows, const at::Tensor& bank,
                                  const OffsetBuckets& plan) {
  report_kernel(Kernel::OffsetBatched);
  const int64_t B = xt.size(1), D = bank.size(2);
  const at::Tensor tokens = rows.index_select(0, plan.row_of_slot);   // [P]
  const at::Tensor x = xt.index_select(0, tokens);                    // [P, B, C]
  const at::Tensor w = bank.index_select(0, plan.entry_of_position);  // [E', C, D]
  at::Tensor s = at::empty({plan.slots, B, D}, xt.options());         // [P, B, D]
  for (const OffsetBucket& k : plan.buckets) {
    at::Tensor s_k = bucket_view(s, k);  // [E_b, n_b B, D]
    at::bmm_out(s_k, bucket_view(x, k), w.narrow(0, k.first_entry, k.entries));
  }
  return s.index_select(0, plan.slot_of_row);  // [R, B, D]
}

// Its gradients given dS [R, B, D]: padding slots get zero gradient rows, so they add
// nothing to a matrix's gradient, and nothing to the input's.
std::pair<at::Tensor, at::Tensor> project_offset_batched_backward(const at::Tensor& xt,
                                                                  const at::Tensor& rows,
                                                                  const at::Tensor& bank,
                                                                  const OffsetBuckets& plan,
                                                                  const at::Tensor& ds) {
  report_kernel(Kernel::OffsetBatched);
  const int64_t N = xt.size(0), B = xt.size(1), C = xt.size(2), D = bank.size(2);
  const at::Tensor tokens = rows.index_select(0, plan.row_of_slot);   // [P]
  const at::Tensor x = xt.index_select(0, tokens);                    // [P, B, C]
  const at::Tensor w = bank.index_select(0, plan.entry_of_position);  // [E', C, D]
  const at::Tensor dslots = at::zeros({plan.slots, B, D}, ds.options())
                                .index_copy_(0, plan.slot_of_row, ds.reshape({-1, B, D}));  // [P, B, D]
  at::Tensor dw = at::empty_like(w), dx = at::empty({plan.slots, B, C}, xt.options());
  for (const OffsetBucket& k : plan.buckets) {
    const at::Tensor x_k = bucket_view(x, k), ds_k = bucket_view(dslots, k);
    const at::Tensor w_k = w.narrow(0, k.first_entry, k.entries);
    at::Tensor dw_k = dw.narrow(0, k.first_entry, k.entries), dx_k = bucket_view(dx, k);
    at::bmm_out(dw_k, x_k.transpose(1, 2), ds_k);  // [E_b, C, D]
    at::bmm_out(dx_k, ds_k, w_k.transpose(1, 2));  // [E_b, n_b B, C]
  }
  const at::Tensor dbank = at::zeros_like(bank).index_copy_(0, plan.entry_of_position, dw);
  const at::Tensor dxt = at::zeros({N, B, C}, xt.options()).index_add_(0, tokens, dx);
  return {dxt, dbank};
}

// The all-token product [E, N B, D], every token by every matrix in one batched product that
// reads the input in place for each matrix (a zero batch stride) and the bank as it lies;
// the pairs' rows picked: [R, B, D].
at::Tensor project_every_token(const at::Tensor& xt, const at::Tensor& rows, const at::Tensor& bank,
                               const std::vector<int64_t>& offset) {
  const int64_t N = xt.size(0), B = xt.size(1), C = xt.size(2), E = bank.size(0), D = bank.size(2);
  const at::Tensor all = at::bmm(xt.reshape({1, N * B, C}).expand({E, N * B, C}), bank);
  return all.view({E * N * B, D}).index_select(0, entry_major_index(rows, offset, N, B)).view({-1, B, D});
}

// Its gradients: dS scattered into the all-token layout, then two products.
std::pair<at::Tensor, at::Tensor> project_every_token_backward(const at::Tensor& xt, const at::Tensor& rows,
                                                               const at::Tensor& bank,
                                                               const std::vector<int64_t>& offset,
                                                               const at::Tensor& ds) {
  const int64_t N = xt.size(0), B = xt.size(1), C = xt.size(2), E = bank.size(0), D = bank.size(2);
  const at::Tensor dall = at::zeros({N * B * E, D}, ds.options())
                              .index_add_(0, token_major_index(rows, offset, B), ds.reshape({-1, D}))
                              .view({N * B, E * D});
  const at::Tensor x2 = xt.reshape({N * B, C});
  const at::Tensor dbank = at::mm(x2.t(), dall).view({C, E, D}).permute({1, 0, 2}).contiguous();
  const at::Tensor dxt = at::mm(dall, bank.permute({1, 0, 2}).reshape({C, E * D}).t()).view({N, B, C});
  return {dxt, dbank};
}

}  // namespace

at::Tensor engine_projection(const EngineOptions& engine, const at::Tensor& xt, const at::Tensor& rows,
                             const at::Tensor& bank, const std::vector<int64_t>& offset, bool bf16,
                             const Bf16Bits* w16) {
  // The CPU's bfloat16 products and copies run on the per-matrix kernels alone.
  const ProjectionAlgorithm algorithm = projection_for(engine, bank, xt.size(0), xt.size(1));
  if (algorithm == ProjectionAlgorithm::OffsetBatched && !bf16 && !w16)
    return project_offset_batched(xt, rows, bank, offset_buckets(offset, rows.device()));
  if (algorithm == ProjectionAlgorithm::AllTokens && !w16) return project_every_token(xt, rows, bank, offset);
  return sorted_projection(engine, xt, rows, bank, offset, bf16, w16);
}

std::pair<at::Tensor, at::Tensor> engine_projection_backward(const EngineOptions& engine,
                                                             const at::Tensor& xt, const at::Tensor& rows,
                                                             const at::Tensor& bank,
                                                             const std::vector<int64_t>& offset,
                                                             const at::Tensor& ds, bool bf16) {
  const ProjectionAlgorithm algorithm = projection_for(engine, bank, xt.size(0), xt.size(1));
  if (algorithm == ProjectionAlgorithm::OffsetBatched && !bf16)
    return project_offset_batched_backward(xt, rows, bank, offset_buckets(offset, rows.device()), ds);
  if (algorithm == ProjectionAlgorithm::AllTokens)
    return project_every_token_backward(xt, rows, bank, offset, ds);
  return sorted_projection_backward(engine, xt, rows, bank, offset, ds, bf16);
}

}  // namespace translution
