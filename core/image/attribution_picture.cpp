#include "image/attribution_picture.h"

#include <algorithm>
#include <string>

#include <ATen/ATen.h>

#include "image/heat_map.h"
#include "util/error.h"

namespace translution {

at::Tensor diverging_ramp(const at::Tensor& t) {
  // ColorBrewer RdBu at -1, -1/2, 0, 1/2, 1 (reversed: blue negative, red positive).
  static const float anchors[5][3] = {
      {33, 102, 172}, {146, 197, 222}, {247, 247, 247}, {244, 165, 130}, {178, 24, 43}};
  return anchored_ramp((t.to(at::kFloat).nan_to_num(0).clamp(-1, 1) + 1) / 2, anchors);
}

double symmetric_limit(const at::Tensor& values, double quantile) {
  const at::Tensor magnitudes = values.to(at::kDouble).abs().nan_to_num(0, 0, 0).flatten();
  const at::Tensor nonzero = magnitudes.masked_select(magnitudes.gt(0));  // [n]
  if (nonzero.numel() == 0) return 1;
  return at::quantile(nonzero, std::clamp(quantile, 0.0, 1.0)).item<double>();
}

at::Tensor attribution_picture(const at::Tensor& canvas, const at::Tensor& map, double limit, int64_t cell,
                               int64_t bar) {
  if (canvas.dim() != 2 || map.sizes() != canvas.sizes())
    throw Error("an attribution picture needs a 2-D canvas and a map of its size, got " +
                std::string(c10::str(canvas.sizes())) + " and " + std::string(c10::str(map.sizes())));
  if (!(limit > 0)) throw Error("an attribution picture needs a scale limit above 0");
  if (cell < 1) throw Error("an attribution picture needs cells of at least 1 pixel");
  auto magnify = [cell](const at::Tensor& rgb) {
    return rgb.repeat_interleave(cell, 0).repeat_interleave(cell, 1);
  };
  const at::Tensor paper = ((1 - canvas.to(at::kFloat).clamp(0, 1)) * 255).round().to(at::kByte);  // [H, W]
  const at::Tensor digit = magnify(paper.unsqueeze(-1).expand({-1, -1, 3}));
  const at::Tensor colours = magnify(diverging_ramp(map.to(at::kFloat) / float(limit)));
  const int64_t height = digit.size(0), gap = std::max<int64_t>(4, cell);
  auto white = [height](int64_t width) { return at::full({height, width, 3}, 255, at::kByte); };
  std::vector<at::Tensor> parts{digit, white(gap), colours};
  if (bar > 0) {
    const at::Tensor ramp = at::linspace(1, -1, height, at::kFloat).unsqueeze(1).expand({height, bar});
    parts.insert(parts.end(), {white(std::max<int64_t>(2, bar / 2)), diverging_ramp(ramp)});
  }
  return at::cat(parts, 1).contiguous();
}

}  // namespace translution
