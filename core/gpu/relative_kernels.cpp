#include "gpu/relative_kernels.h"

#include <string>

#include <ATen/ATen.h>

#include "util/error.h"

#ifdef TRANSLUTION_WITH_CUDA_KERNELS
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "cuda/relative_kernels.h"
#endif

namespace translution {

#ifdef TRANSLUTION_WITH_CUDA_KERNELS

bool fused_relative_kernels_built() { return true; }

namespace {

// A float32 CUDA tensor of `sizes` on `device`, contiguous, or an Error naming `what`.
at::Tensor checked(const at::Tensor& t, const char* what, at::IntArrayRef sizes, const c10::Device& device) {
  if (!t.defined() || !t.is_cuda() || t.device() != device || t.scalar_type() != at::kFloat ||
      t.sizes() != sizes)
    throw Error(std::string("fused relative kernels: ") + what + " must be float32 " + c10::str(sizes) +
                " on " + device.str());
  return t.contiguous();
}

// The shape of inputs x [B, N, C] and a bank [E, C, D], after checking the pair table.
cuda_kernels::RelativeShape pair_shape(const FusedPairs& p, const at::Tensor& x, const at::Tensor& bank) {
  if (x.dim() != 3 || bank.dim() != 3 || p.heads < 1 || bank.size(2) % p.heads != 0)
    throw Error("fused relative kernels: inputs [B, N, C], banks [E, C, D] with D a multiple of the heads");
  if (!p.entry_of.is_cuda() || p.entry_of.scalar_type() != at::kLong || p.entry_of.dim() != 2 ||
      p.entry_of.size(1) != x.size(1) || p.entry_of.size(0) > x.size(1))
    throw Error("fused relative kernels: entry_of must be int64 [M, N] on the inputs' device");
  return cuda_kernels::RelativeShape{x.size(0), x.size(1), p.entry_of.size(0),
                                     x.size(2), p.heads,   bank.size(2) / p.heads};
}

CUstream_st* stream_on(const c10::Device& device) {
  return c10::cuda::getCurrentCUDAStream(device.index()).stream();
}

}  // namespace

at::Tensor fused_relative_logits(const FusedPairs& p, const at::Tensor& xq_in, const at::Tensor& wq_in,
                                 const at::Tensor& xk_in, const at::Tensor& wk_in) {
  const cuda_kernels::RelativeShape s = pair_shape(p, xq_in, wq_in);
  const c10::Device device = xq_in.device();
  const c10::cuda::CUDAGuard guard(device);
  const int64_t B = s.batch, N = s.tokens, C = s.dim, D = s.width(), E = p.entries;
  const at::Tensor xq = checked(xq_in, "xq", {B, N, C}, device), wq = checked(wq_in, "wq", {E, C, D}, device),
                   xk = checked(xk_in, "xk", {B, N, C}, device), wk = checked(wk_in, "wk", {E, C, D}, device);
  const at::Tensor entry_of = p.entry_of.contiguous();
  at::Tensor logits = at::empty({B, s.heads, s.queries, N}, xq.options());
  cuda_kernels::launch_relative_logits(s, xq.data_ptr<float>(), wq.data_ptr<float>(), xk.data_ptr<float>(),
                                       wk.data_ptr<float>(), entry_of.data_ptr<int64_t>(),
                                       logits.data_ptr<float>(), stream_on(device));
  return logits;
}

at::Tensor fused_relative_values(const FusedPairs& p, const at::Tensor& alpha_in, const at::Tensor& xv_in,
                                 const at::Tensor& wv_in) {
  const cuda_kernels::RelativeShape s = pair_shape(p, xv_in, wv_in);
  const c10::Device device = xv_in.device();
  const c10::cuda::CUDAGuard guard(device);
  const int64_t B = s.batch, N = s.tokens, C = s.dim, D = s.width(), E = p.entries;
  const at::Tensor alpha = checked(alpha_in, "alpha", {B, s.heads, s.queries, N}, device),
                   xv = checked(xv_in, "xv", {B, N, C}, device), wv = checked(wv_in, "wv", {E, C, D}, device);
  const at::Tensor entry_of = p.entry_of.contiguous();
  at::Tensor out = at::empty({B, s.queries, D}, xv.options());
  cuda_kernels::launch_relative_values(s, alpha.data_ptr<float>(), xv.data_ptr<float>(), wv.data_ptr<float>(),
                                       entry_of.data_ptr<int64_t>(), out.data_ptr<float>(),
                                       stream_on(device));
  return out;
}

std::vector<at::Tensor> fused_relative_logits_backward(const FusedPairs& p, const at::Tensor& dlogits_in,
                                                       const at::Tensor& xq_in, const at::Tensor& wq_in,
                                                       const at::Tensor& xk_in, const at::Tensor& wk_in) {
  const cuda_kernels::RelativeShape s = pair_shape(p, xq_in, wq_in);
  const c10::Device device = xq_in.device();
  const c10::cuda::CUDAGuard guard(device);
  const int64_t B = s.batch, N = s.tokens, C = s.dim, D = s.width(), E = p.entries;
  const at::Tensor dlogits = checked(dlogits_in, "dlogits", {B, s.heads, s.queries, N}, device),
                   xq = checked(xq_in, "xq", {B, N, C}, device), wq = checked(wq_in, "wq", {E, C, D}, device),
                   xk = checked(xk_in, "xk", {B, N, C}, device), wk = checked(wk_in, "wk", {E, C, D}, device);
  const at::Tensor entry_of = p.entry_of.contiguous();
  at::Tensor dxq = at::empty_like(xq), dwq = at::empty_like(wq), dxk = at::empty_like(xk),
             dwk = at::empty_like(wk);
  cuda_kernels::launch_relative_logits_backward(
      s, E, dlogits.data_ptr<float>(), xq.data_ptr<float>(), wq.data_ptr<float>(), xk.data_ptr<float>(),
      wk.data_ptr<float>(), entry_of.data_ptr<int64_t>(), dxq.data_ptr<float>(), dwq.data_ptr<float>(),
      dxk.data_ptr<float>(), dwk.data_ptr<float>(), stream_on(device));
  return {dxq, dwq, dxk, dwk};
}

std::vector<at::Tensor> fused_relative_values_backward(const FusedPairs& p, const at::Tensor& dout_in,
                                                       const at::Tensor& alpha_in, const at::Tensor& xv_in,
                                                       const at::Tensor& wv_in) {
  const cuda_kernels::RelativeShape s = pair_shape(p, xv_in, wv_in);
  const c10::Device device = xv_in.device();
  const c10::cuda::CUDAGuard guard(device);
  const int64_t B = s.batch, N = s.tokens, C = s.dim, D = s.width(), E = p.entries;
  const at::Tensor dout = checked(dout_in, "dout", {B, s.queries, D}, device),
                   alpha = checked(alpha_in, "alpha", {B, s.heads, s.queries, N}, device),
                   xv = checked(xv_in, "xv", {B, N, C}, device), wv = checked(wv_in, "wv", {E, C, D}, device);
  const at::Tensor entry_of = p.entry_of.contiguous();
  at::Tensor dalpha = at::empty_like(alpha), dxv = at::empty_like(xv), dwv = at::empty_like(wv);
  cuda_kernels::launch_relative_values_backward(
      s, E, dout.data_ptr<float>(), alpha.data_ptr<float>(), xv.data_ptr<float>(), wv.data_ptr<float>(),
      entry_of.data_ptr<int64_t>(), dalpha.data_ptr<float>(), dxv.data_ptr<float>(), dwv.data_ptr<float>(),
      stream_on(device));
  return {dalpha, dxv, dwv};
}

#else

bool fused_relative_kernels_built() { return false; }

namespace {
[[noreturn]] void not_built() {
  throw Error(
      "the fused CUDA kernels are not in this build: they need a CUDA LibTorch and nvcc "
      "(-DTRANSLUTION_CUDA_KERNELS=ON, the default)");
}
}  // namespace

at::Tensor fused_relative_logits(const FusedPairs&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                 const at::Tensor&) {
  not_built();
}
at::Tensor fused_relative_values(const FusedPairs&, const at::Tensor&, const at::Tensor&, const at::Tensor&) {
  not_built();
}
std::vector<at::Tensor> fused_relative_logits_backward(const FusedPairs&, const at::Tensor&,
                                                       const at::Tensor&, const at::Tensor&,
                                                       const at::Tensor&, const at::Tensor&) {
  not_built();
}
std::vector<at::Tensor> fused_relative_values_backward(const FusedPairs&, const at::Tensor&,
                                                       const at::Tensor&, const at::Tensor&,
                                                       const at::Tensor&) {
  not_built();
}

#endif

}  // namespace translution
