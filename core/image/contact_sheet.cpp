#include "image/contact_sheet.h"

#include <ATen/ATen.h>

#include "util/error.h"

namespace translution {

at::Tensor contact_sheet(const std::vector<at::Tensor>& images, int64_t rows, int64_t cols, int64_t gap) {
  if (images.empty()) throw Error("contact sheet needs at least one image");
  if (rows < 1 || cols < 1 || int64_t(images.size()) > rows * cols)
    throw Error("contact sheet grid " + std::to_string(rows) + "x" + std::to_string(cols) + " cannot hold " +
                std::to_string(images.size()) + " images");
  const int64_t h = images[0].size(0), w = images[0].size(1);
  at::Tensor sheet = at::full({rows * h + (rows - 1) * gap, cols * w + (cols - 1) * gap}, 0.5, at::kFloat);
  for (size_t k = 0; k < images.size(); ++k) {
    const int64_t r = int64_t(k) / cols, c = int64_t(k) % cols;
    sheet.narrow(0, r * (h + gap), h).narrow(1, c * (w + gap), w).copy_(images[k]);
  }
  return sheet;
}

}  // namespace translution
