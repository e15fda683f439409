#pragma once
// The four datasets of the papers, built on the fly from the MNIST digits:
//   mnist   - the 28x28 digit as is (the preprint's patch-7 setting)
//   static  - the digit centred on a larger canvas (84x84 by default)
//   dynamic - the digit at a uniformly random position fully inside the canvas
//   moving  - one frame of a digit bouncing across a 64x64 canvas (the preprint's Moving MNIST)
// Samples are composed when asked for, so a batch never copies the whole set.
#include <string>

#include <torch/data/datasets/base.h>
#include <torch/data/example.h>

#include "data/mnist.h"
#include "data/placement.h"

namespace translution {

// The usual MNIST normalisation, applied to every canvas (background included).
constexpr float kMnistMean = 0.1307f;
constexpr float kMnistStd = 0.3081f;

CanvasKind parse_canvas_kind(const std::string& name);  // mnist|static|dynamic|moving
const char* canvas_kind_name(CanvasKind kind);
int64_t default_canvas_size(CanvasKind kind);  // 28, 84, 84, 64

struct CanvasSpec {
  CanvasKind kind = CanvasKind::Static;
  int64_t canvas = 0;  // 0 means default_canvas_size(kind)
  uint64_t seed = 0;   // changes dynamic and moving positions
  bool normalize = true;
};

class CanvasDataset : public torch::data::datasets::Dataset<CanvasDataset> {
 public:
  CanvasDataset(MnistDigits digits, Split split, CanvasSpec spec);

  // data: float [1, S, S]; target: int64 scalar
  torch::data::Example<> get(size_t index) override;
  torch::optional<size_t> size() const override;

  // Raw canvas in [0, 1] (no normalisation), for rendering and the studio.
  at::Tensor canvas(int64_t index) const;
  Placement placement(int64_t index) const;
  int64_t label(int64_t index) const;
  int64_t canvas_size() const { return canvas_; }
  const CanvasSpec& spec() const { return spec_; }
  Split split() const { return split_; }
  const MnistDigits& digits() const { return digits_; }

 private:
  MnistDigits digits_;
  Split split_;
  CanvasSpec spec_;
  int64_t canvas_;
};

// Pastes a [rows, cols] image (any dtype) into a zero canvas at `at`, as float in [0, 1].
at::Tensor compose_canvas(const at::Tensor& digit_u8, int64_t canvas, Placement where);
at::Tensor normalize_pixels(const at::Tensor& unit_pixels);

}  // namespace translution
