#include "cpu/pair_kernels.h"

#include <atomic>
#include <initializer_list>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>

#include "cpu/gather_rows.h"
#include "cpu/helper_threads.h"
#include "cpu/short_vectors.h"
#include "util/engine_options.h"
#include "util/error.h"

namespace translution {
namespace {

bool fused_path(const EngineOptions& engine, std::initializer_list<const at::Tensor*> tensors) {
  if (engine.reference) return false;
  const at::ScalarType type = (*tensors.begin())->scalar_type();
  if (type != at::kFloat && type != at::kDouble) return false;
  for (const at::Tensor* t : tensors)
    if (!t->is_cpu() || !t->is_contiguous() || t->scalar_type() != type) return false;
  return true;
}

// Each work item is one head's slice of one row (tens of floats): a thread's share is
// worth handing off from a few thousand items (one image's pairs are about 7500).
constexpr int64_t kGrain = 2048;

}  // namespace

at::Tensor pair_dots(const EngineOptions& engine, const at::Tensor& sq, const at::Tensor& sk, int64_t heads) {
  const int64_t R = sq.size(0), B = sq.size(1), D = sq.size(2), w = D / heads;
  if (!fused_path(engine, {&sq, &sk})) return (sq * sk).view({R, B, heads, w}).sum(-1);
  at::Tensor out = at::empty({R, B, heads}, sq.options());
  AT_DISPATCH_FLOATING_TYPES(sq.scalar_type(), "pair_dots", [&] {
    const scalar_t *q = sq.data_ptr<scalar_t>(), *k = sk.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    run_chunks(R * B * heads, element_grain(engine, kGrain), element_parts(engine),
               [&](int64_t begin, int64_t end) {
                 for (int64_t t = begin; t < end; ++t) o[t] = dot(q + t * w, k + t * w, w);
               });
  });
  return out;
}

std::pair<at::Tensor, at::Tensor> pair_dots_backward(const EngineOptions& engine, at::Tensor sq,
                                                     at::Tensor sk, const at::Tensor& g, bool in_place) {
  const int64_t R = sq.size(0), B = sq.size(1), D = sq.size(2), H = g.size(2), w = D / H;
  if (!fused_path(engine, {&sq, &sk, &g})) {
    // The broadcast operand goes second: ATen 1.13 runs that order about twice as fast.
    const at::Tensor gh = g.unsqueeze(-1);
    if (in_place) {
      sk.view({R, B, H, w}).mul_(gh);
      sq.view({R, B, H, w}).mul_(gh);
      return {sk, sq};
    }
    return {(sk.view({R, B, H, w}) * gh).view({R, B, D}), (sq.view({R, B, H, w}) * gh).view({R, B, D})};
  }
  at::Tensor dsq = in_place ? sk : at::empty_like(sq), dsk = in_place ? sq : at::empty_like(sk);
  AT_DISPATCH_FLOATING_TYPES(sq.scalar_type(), "pair_dots_backward", [&] {
    const scalar_t *q = sq.data_ptr<scalar_t>(), *k = sk.data_ptr<scalar_t>(), *gp = g.data_ptr<scalar_t>();
    scalar_t *dq = dsq.data_ptr<scalar_t>(), *dk = dsk.data_ptr<scalar_t>();
    run_chunks(R * B * H, element_grain(engine, kGrain), element_parts(engine),
               [&](int64_t begin, int64_t end) {
                 for (int64_t t = begin; t < end; ++t) {
                   scaled(dq + t * w, gp[t], k + t * w, w);  // in place: dq is k, scaled where it lies
                   scaled(dk + t * w, gp[t], q + t * w, w);
                 }
               });
  });
  return {dsq, dsk};
}

at::Tensor scatter_weighted(const EngineOptions& engine, const at::Tensor& a, const at::Tensor& v,
                            const at::Tensor& query_of_row, int64_t tokens, bool head_sliced) {
  const int64_t R = v.size(0), B = v.size(1), D = v.size(2), H = a.size(2);
  const int64_t w = head_sliced ? D / H : D;  // width each head adds
  if (!fused_path(engine, {&a, &v}) || !query_of_row.is_cpu()) {
    const at::Tensor weighted =
        head_sliced ? v.view({R, B, H, w}) * a.unsqueeze(-1) : a.unsqueeze(-1) * v.unsqueeze(2);
    return at::zeros({tokens, B, H, w}, v.options()).index_add_(0, query_of_row, weighted);
  }
  at::Tensor out = at::zeros({tokens, B, H, w}, v.options());
  const at::Tensor rows = query_of_row.contiguous();
  AT_DISPATCH_FLOATING_TYPES(v.scalar_type(), "scatter_weighted", [&] {
    const scalar_t *ap = a.data_ptr<scalar_t>(), *vp = v.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    const int64_t* query = rows.data_ptr<int64_t>();
    // Rows of different pairs add into the same query: threads split the batch, not the rows.
    run_chunks(B, 1, element_parts(engine), [&](int64_t b0, int64_t b1) {
      for (int64_t r = 0; r < R; ++r)
        for (int64_t b = b0; b < b1; ++b) {
          const scalar_t* vrow = vp + (r * B + b) * D;
          scalar_t* orow = o + (query[r] * B + b) * H * w;
          for (int64_t h = 0; h < H; ++h)
            axpy(orow + h * w, ap[(r * B + b) * H + h], vrow + (head_sliced ? h * w : 0), w);
        }
    });
  });
  return out;
}

std::pair<at::Tensor, at::Tensor> scatter_weighted_backward(const EngineOptions& engine,
                                                            const at::Tensor& dout_in, const at::Tensor& a,
                                                            at::Tensor v, const at::Tensor& query_of_row,
                                                            bool head_sliced, bool in_place) {
  const int64_t R = v.size(0), B = v.size(1), D = v.size(2), H = a.size(2);
  const int64_t w = head_sliced ? D / H : D;
  const at::Tensor dout = dout_in.contiguous();  // [N, B, H, w]
  if (!fused_path(engine, {&dout, &a, &v}) || !query_of_row.is_cpu()) {
    const at::Tensor dw = gather_rows(dout, query_of_row);  // [R, B, H, w]
    const at::Tensor vh = head_sliced ? v.view({R, B, H, w}) : v.unsqueeze(2);
    const at::Tensor da = (dw * vh).sum(-1);
    const at::Tensor dv =
        head_sliced ? (dw * a.unsqueeze(-1)).view({R, B, D}) : (dw * a.unsqueeze(-1)).sum(2);
    return {da, dv};
  }
  at::Tensor da = at::empty({R, B, H}, v.options()), dv = in_place ? v : at::empty_like(v);
  const at::Tensor rows = query_of_row.contiguous();
  AT_DISPATCH_FLOATING_TYPES(v.scalar_type(), "scatter_weighted_backward", [&] {
    const scalar_t *dp = dout.data_ptr<scalar_t>(), *ap = a.data_ptr<scalar_t>(),
                   *vp = v.data_ptr<scalar_t>();
    scalar_t *dap = da.data_ptr<scalar_t>(), *dvp = dv.data_ptr<scalar_t>();
    const int64_t* query = rows.data_ptr<int64_t>();
    run_chunks(R * B, element_grain(engine, kGrain), element_parts(engine), [&](int64_t begin, int64_t end) {
      for (int64_t rb = begin; rb < end; ++rb) {
        const scalar_t* g = dp + (query[rb / B] * B + rb % B) * H * w;  // the query's gradient, read in place
        const scalar_t* vrow = vp + rb * D;
        scalar_t* dvrow = dvp + rb * D;
        // Every dot product reads v before dv (possibly the same row) is written.
        for (int64_t h = 0; h < H; ++h) dap[rb * H + h] = dot(g + h * w, vrow + (head_sliced ? h * w : 0), w);
        for (int64_t h = 0; h < H; ++h) {
          const scalar_t alpha = ap[rb * H + h];
          if (head_sliced)
            scaled(dvrow + h * w, alpha, g + h * w, w);
          else if (h == 0)
            scaled(dvrow, alpha, g, w);
          else
            axpy(dvrow, alpha, g + h * w, w);
        }
      }
    });
  });
  return {da, dv};
}

}  // namespace translution
