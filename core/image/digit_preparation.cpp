#include "image/digit_preparation.h"

#include <algorithm>
#include <cmath>

#include <ATen/ATen.h>

#include "util/error.h"

namespace translution {
namespace {

constexpr int64_t kFrame = 28, kBox = 20;

// The paper's colour is the median of the border: robust to a stroke touching the edge.
double border_median(const at::Tensor& g) {
  const at::Tensor border =
      at::cat({g.select(0, 0), g.select(0, g.size(0) - 1), g.select(1, 0), g.select(1, g.size(1) - 1)});
  return border.median().item<double>();
}

// Ink in [0, 1]: 0 where the paper is, 1 at the darkest (or brightest) stroke.
// One copy of the picture, then in place: a large picture costs it twice, not five times.
at::Tensor ink_of(const at::Tensor& grey) {
  const double paper = border_median(grey);
  at::Tensor ink = paper > 0.5 ? (paper - grey) : (grey - paper);  // light paper: dark ink
  ink.clamp_min_(0);
  const double peak = ink.max().item<double>();
  if (peak < 0.1) throw Error("no digit found: the image has no strokes that differ from its background");
  ink.div_(peak);
  // Faint paper texture and JPEG noise are not ink.
  return ink.masked_fill_(ink < 0.15, 0);
}

at::Tensor crop_to_ink(const at::Tensor& ink) {
  const at::Tensor rows = ink.sum(1).nonzero().flatten(), cols = ink.sum(0).nonzero().flatten();
  const int64_t top = rows.min().item<int64_t>(), bottom = rows.max().item<int64_t>();
  const int64_t left = cols.min().item<int64_t>(), right = cols.max().item<int64_t>();
  return ink.narrow(0, top, bottom - top + 1).narrow(1, left, right - left + 1);
}

// Resizes keeping the aspect ratio so the longer side is kBox: area averaging when
// shrinking (as anti-aliased as MNIST's), bilinear when enlarging.
at::Tensor fit_box(const at::Tensor& ink) {
  const int64_t h = ink.size(0), w = ink.size(1);
  const double scale = double(kBox) / double(std::max(h, w));
  const int64_t nh = std::max<int64_t>(1, std::lround(h * scale)),
                nw = std::max<int64_t>(1, std::lround(w * scale));
  const at::Tensor x = ink.unsqueeze(0).unsqueeze(0);
  at::Tensor out = scale < 1 ? at::adaptive_avg_pool2d(x, {nh, nw})
                             : at::upsample_bilinear2d(x, {nh, nw}, /*align_corners=*/false);
  out = out.squeeze(0).squeeze(0);
  return out / std::max(out.max().item<double>(), 1e-6);
}

}  // namespace

at::Tensor prepare_digit(const at::Tensor& grey) {
  if (grey.dim() != 2 || grey.size(0) < 2 || grey.size(1) < 2)
    throw Error("a digit image must be 2-D and at least 2x2");
  const at::Tensor box = fit_box(crop_to_ink(ink_of(grey.to(at::kFloat))));
  const int64_t h = box.size(0), w = box.size(1);
  // Centre of mass of the box, then the offset that puts it at pixel (14, 14) as in MNIST.
  const double mass = box.sum().item<double>();
  const double cy = (box.sum(1) * at::arange(h, at::kFloat)).sum().item<double>() / mass;
  const double cx = (box.sum(0) * at::arange(w, at::kFloat)).sum().item<double>() / mass;
  const int64_t top = std::clamp<int64_t>(std::lround(kFrame / 2.0 - cy), 0, kFrame - h);
  const int64_t left = std::clamp<int64_t>(std::lround(kFrame / 2.0 - cx), 0, kFrame - w);
  at::Tensor frame = at::zeros({kFrame, kFrame}, at::kFloat);
  frame.narrow(0, top, h).narrow(1, left, w).copy_(box);
  return frame.mul(255.0).round().clamp(0, 255).to(at::kByte);
}

}  // namespace translution
