#pragma once
// The MNIST digits as tensors, loaded from the four verified IDX files.
#include <string>

#include <ATen/core/Tensor.h>

namespace translution {

enum class Split { Train, Test };
const char* split_name(Split split);
Split parse_split(const std::string& name);  // "train" or "test", else translution::Error

struct MnistDigits {
  at::Tensor images;  // uint8 [N, rows, cols], 0 = background
  at::Tensor labels;  // int64 [N], 0..9
  int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

// Loads one split from `dir`. Errors name the file and what is wrong with it
// (missing, corrupt, wrong shape, label out of range, count mismatch).
MnistDigits load_mnist(const std::string& dir, Split split);

// Same checks for a pair of IDX files anywhere (tests feed it generated files).
MnistDigits load_mnist_files(const std::string& images_path, const std::string& labels_path);

}  // namespace translution
