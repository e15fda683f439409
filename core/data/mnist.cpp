#include "data/mnist.h"

#include <filesystem>

#include <ATen/ATen.h>

#include "data/idx_file.h"
#include "data/mnist_provision.h"
#include "util/error.h"

namespace translution {

const char* split_name(Split split) { return split == Split::Train ? "train" : "test"; }

Split parse_split(const std::string& name) {
  if (name == "train") return Split::Train;
  if (name == "test") return Split::Test;
  throw Error("unknown split '" + name + "' (expected train or test)");
}

MnistDigits load_mnist_files(const std::string& images_path, const std::string& labels_path) {
  IdxArray images = read_idx_file(images_path);
  IdxArray labels = read_idx_file(labels_path);
  if (images.dims.size() != 3)
    throw Error(images_path + ": expected an image file with 3 dimensions (count, rows, cols), found " +
                std::to_string(images.dims.size()));
  if (labels.dims.size() != 1)
    throw Error(labels_path + ": expected a label file with 1 dimension, found " +
                std::to_string(labels.dims.size()));
  if (images.dims[0] != labels.dims[0])
    throw Error(labels_path + ": holds " + std::to_string(labels.dims[0]) + " labels but " + images_path +
                " holds " + std::to_string(images.dims[0]) + " images");
  for (size_t i = 0; i < labels.data.size(); ++i)
    if (labels.data[i] > 9)
      throw Error(labels_path + ": label " + std::to_string(labels.data[i]) + " at index " +
                  std::to_string(i) + " is out of range 0..9");
  MnistDigits out;
  out.images = at::from_blob(images.data.data(), images.dims, at::kByte).clone();
  out.labels = at::from_blob(labels.data.data(), labels.dims, at::kByte).to(at::kLong);
  return out;
}

MnistDigits load_mnist(const std::string& dir, Split split) {
  const auto& specs = mnist_file_specs();
  const auto& image_spec = specs[split == Split::Train ? 0 : 2];
  const auto& label_spec = specs[split == Split::Train ? 1 : 3];
  const auto images = std::filesystem::path(dir) / image_spec.name;
  const auto labels = std::filesystem::path(dir) / label_spec.name;
  if (!std::filesystem::exists(images) || !std::filesystem::exists(labels))
    throw Error(dir + ": MNIST " + split_name(split) + " files are missing; run `translution data fetch`");
  return load_mnist_files(images.string(), labels.string());
}

}  // namespace translution
