#include "data/canvas_dataset.h"

#include <ATen/ATen.h>

#include "util/error.h"

namespace translution {

CanvasKind parse_canvas_kind(const std::string& name) {
  if (name == "mnist") return CanvasKind::Mnist;
  if (name == "static") return CanvasKind::Static;
  if (name == "dynamic") return CanvasKind::Dynamic;
  if (name == "moving") return CanvasKind::Moving;
  throw Error("unknown dataset '" + name + "' (expected mnist, static, dynamic or moving)");
}

const char* canvas_kind_name(CanvasKind kind) {
  switch (kind) {
    case CanvasKind::Mnist: return "mnist";
    case CanvasKind::Static: return "static";
    case CanvasKind::Dynamic: return "dynamic";
    case CanvasKind::Moving: return "moving";
  }
  return "?";
}

int64_t default_canvas_size(CanvasKind kind) {
  switch (kind) {
    case CanvasKind::Mnist: return 28;
    case CanvasKind::Moving: return 64;
    default: return 84;
  }
}

CanvasDataset::CanvasDataset(MnistDigits digits, Split split, CanvasSpec spec)
    : digits_(std::move(digits)), split_(split), spec_(spec) {
  if (!digits_.images.defined() || digits_.images.dim() != 3)
    throw Error("canvas dataset needs digit images of shape [N, rows, cols]");
  const int64_t rows = digits_.images.size(1), cols = digits_.images.size(2);
  canvas_ = spec_.canvas > 0 ? spec_.canvas : default_canvas_size(spec_.kind);
  if (spec_.kind == CanvasKind::Mnist && canvas_ != rows)
    throw Error("the mnist dataset is the plain " + std::to_string(rows) + "x" + std::to_string(cols) +
                " digit; canvas size " + std::to_string(canvas_) + " is not allowed for it");
  if (canvas_ < rows || canvas_ < cols)
    throw Error("canvas size " + std::to_string(canvas_) + " is smaller than the " + std::to_string(rows) +
                "x" + std::to_string(cols) + " digit");
}

torch::optional<size_t> CanvasDataset::size() const { return size_t(digits_.size()); }

Placement CanvasDataset::placement(int64_t index) const {
  return place_digit(spec_.kind, canvas_, digits_.images.size(1), spec_.seed, split_, uint64_t(index));
}

int64_t CanvasDataset::label(int64_t index) const { return digits_.labels[index].item<int64_t>(); }

at::Tensor CanvasDataset::canvas(int64_t index) const {
  if (index < 0 || index >= digits_.size())
    throw Error("sample index " + std::to_string(index) + " is out of range (the " + split_name(split_) +
                " split has " + std::to_string(digits_.size()) + " samples)");
  return compose_canvas(digits_.images[index], canvas_, placement(index));
}

torch::data::Example<> CanvasDataset::get(size_t index) {
  at::Tensor image = canvas(int64_t(index)).unsqueeze(0);
  if (spec_.normalize) image = normalize_pixels(image);
  return {image, digits_.labels[int64_t(index)]};
}

at::Tensor compose_canvas(const at::Tensor& digit_u8, int64_t canvas, Placement where) {
  at::Tensor out = at::zeros({canvas, canvas}, at::kFloat);
  const int64_t rows = digit_u8.size(0), cols = digit_u8.size(1);
  out.narrow(0, where.y, rows).narrow(1, where.x, cols).copy_(digit_u8.to(at::kFloat).div(255.0));
  return out;
}

at::Tensor normalize_pixels(const at::Tensor& unit_pixels) { return (unit_pixels - kMnistMean) / kMnistStd; }

}  // namespace translution
