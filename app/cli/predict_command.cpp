// `translution predict`
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/json_line.h"
#include "cli/memory_check.h"
#include "cli/picture_canvas.h"
#include "data/canvas_dataset.h"
#include "image/png_io.h"
#include "train/checkpoint.h"
#include "util/device.h"
#include "util/error.h"
#include "util/output_path.h"

namespace translution::cli {
namespace {

struct PredictOptions {
  std::string checkpoint, at, device = "auto", save_canvas;
  std::vector<std::string> images;
  bool force = false, json = false;
};

// Where --save-canvas puts the canvas of the picture at `path`.
std::string canvas_file(const PredictOptions& o, const std::string& path) {
  return o.save_canvas + "/" + path.substr(path.find_last_of('/') + 1) + ".canvas.png";
}

// The folder is made with the first canvas that is read: a run whose pictures are all
// refused makes none. Never written over a picture or the checkpoint.
void save_canvas(const PredictOptions& o, const std::string& path, const at::Tensor& image) {
  std::error_code ec;
  std::filesystem::create_directories(o.save_canvas, ec);
  if (ec) throw Error(o.save_canvas + ": cannot create the folder: " + ec.message());
  const std::string file = checked_output_path(canvas_file(o, path));
  std::vector<std::string> inputs = o.images;
  inputs.push_back(o.checkpoint);
  refuse_inputs_as_outputs(inputs, {file});
  write_png_gray(file, image);
}

// One picture's classes, printed; a picture that cannot be read is an error of its own.
void predict_one(const EngineOptions& engine, const PredictOptions& o, Checkpoint& c, const Placement& at,
                 const c10::Device& device, const std::string& path) {
  const int64_t canvas = c.config.image_height;
  const at::Tensor image = compose_canvas(read_digit(path), canvas, at);
  if (!o.save_canvas.empty()) save_canvas(o, path, image);
  const at::Tensor probs =
      c.model->forward(engine, normalize_pixels(image).view({1, 1, canvas, canvas}).to(device))
          .softmax(1)
          .squeeze(0)
          .to(at::kCPU, at::kDouble);
  const int64_t best = probs.argmax().item<int64_t>();
  std::vector<double> p(probs.data_ptr<double>(), probs.data_ptr<double>() + probs.numel());
  if (o.json) {
    const nlohmann::ordered_json out = {{"image", path}, {"predicted", best}, {"probabilities", p}};
    std::cout << json_line(out) << std::endl;
    return;
  }
  std::printf("%s: %lld (%.1f%%)\n ", path.c_str(), (long long)best, 100 * p[size_t(best)]);
  for (size_t k = 0; k < p.size(); ++k) std::printf(" %zu:%.3f", k, p[k]);
  std::printf("\n");
}

int predict(const PredictOptions& o) {
  if (o.images.empty()) throw Error("predict needs at least one image file");
  const c10::Device device = parse_device(o.device);
  const EngineOptions engine;  // predict has no flags for them: the defaults
  check_checkpoints(engine, o.force, {o.checkpoint}, 1, "", device);
  Checkpoint c = load_checkpoint(o.checkpoint, device);
  if (c.config.image_height != c.config.image_width || c.config.channels != 1)
    throw Error("predict needs a model of square one-channel images");
  const int64_t canvas = c.config.image_height;
  const Placement at = parse_at(o.at, canvas);
  if (!o.save_canvas.empty()) {
    std::set<std::string> names;
    for (const std::string& path : o.images)
      if (!names.insert(canvas_file(o, path)).second)
        throw Error("two pictures are named " + path.substr(path.find_last_of('/') + 1) +
                    ": their canvases would share a file in " + o.save_canvas);
    if (std::filesystem::exists(o.save_canvas) && !std::filesystem::is_directory(o.save_canvas))
      throw Error(o.save_canvas + ": --save-canvas must be a folder, not a file");
  }
  c.model->eval();
  at::NoGradGuard no_grad;
  int failures = 0;
  for (const std::string& path : o.images) {
    try {
      predict_one(engine, o, c, at, device, path);
    } catch (const Error& e) {
      std::cerr << "error: " << e.what() << "\n";
      ++failures;
    }
  }
  return failures ? 1 : 0;
}

}  // namespace

void add_predict_command(CLI::App& root, Runners& runners) {
  CLI::App* app = root.add_subcommand("predict", "classify PNG or JPEG pictures of handwritten digits");
  auto o = std::make_shared<PredictOptions>();
  app->add_option("images", o->images, "pictures to classify")->type_name("IMAGE...");
  app->add_option("--checkpoint", o->checkpoint, "the model")->required();
  app->add_option("--at", o->at, "the digit frame's top-left pixel (default: centred)")->type_name("X,Y");
  add_device(*app, o->device);
  app->add_option("--save-canvas", o->save_canvas, "write what the model saw as PNGs here")->type_name("DIR");
  app->add_flag("--force", o->force, kForceHelp);
  app->add_flag("--json", o->json, "print one JSON object per picture");
  runners[app] = [o] { return predict(*o); };
}

}  // namespace translution::cli
