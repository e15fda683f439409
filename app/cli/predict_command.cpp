// `translution predict`
#include <cstdio>
#include <iostream>

#include <ATen/ATen.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/memory_check.h"
#include "data/canvas_dataset.h"
#include "image/digit_preparation.h"
#include "image/image_file.h"
#include "image/png_io.h"
#include "train/checkpoint.h"
#include "util/device.h"
#include "util/error.h"
#include "util/json_writer.h"

namespace translution::cli {
namespace {

const std::string kPredictUsage = R"(usage: translution predict --checkpoint FILE.ckpt [--at X,Y] [--save-canvas DIR]
                           [--device auto|cpu|cuda] [--force] [--json] IMAGE...

Classifies PNG or JPEG pictures of a handwritten digit. Each picture is prepared as
MNIST's digits were (grey, light-on-dark, ink fitted to 20x20 inside 28x28, centred
by mass) and placed on the model's canvas: centred, or with its 28x28 frame's
top-left corner at pixel X,Y. --save-canvas writes what the model saw as PNGs.
)" + std::string(kForceHelp) + "\n";

Placement parse_at(const std::string& text, int64_t canvas) {
  long long x = 0, y = 0;
  char extra = 0;
  if (std::sscanf(text.c_str(), "%lld,%lld%c", &x, &y, &extra) != 2)
    throw Error("--at expects X,Y (the digit frame's top-left pixel), got '" + text + "'");
  const int64_t limit = canvas - 28;
  if (x < 0 || y < 0 || x > limit || y > limit)
    throw Error("--at " + text + " puts the 28x28 digit outside the " + std::to_string(canvas) + "x" +
                std::to_string(canvas) + " canvas (X and Y must be 0.." + std::to_string(limit) + ")");
  return {x, y};
}

}  // namespace

int predict_command(const std::vector<std::string>& words) {
  if (const auto status = usage_exit(words, kPredictUsage.c_str(), false)) return *status;
  const Args args(words, {"json", "force"}, {"checkpoint", "at", "device", "save-canvas"});
  if (args.positional().empty()) throw Error("predict needs at least one image file");
  const c10::Device device = parse_device(args.get("device", "auto"));
  check_checkpoints(args, {args.require("checkpoint")}, 1, "", device);
  Checkpoint c = load_checkpoint(args.require("checkpoint"), device);
  if (c.config.image_height != c.config.image_width || c.config.channels != 1)
    throw Error("predict needs a model of square one-channel images");
  const int64_t canvas = c.config.image_height;
  const Placement at = args.has("at") ? parse_at(args.get("at"), canvas) : Placement{(canvas - 28) / 2, (canvas - 28) / 2};
  c.model->eval();
  at::NoGradGuard no_grad;
  int failures = 0;
  for (const std::string& path : args.positional()) {
    try {
      const at::Tensor image = compose_canvas(prepare_digit(read_image_gray(path)), canvas, at);
      if (args.has("save-canvas")) {
        const std::string name = path.substr(path.find_last_of('/') + 1);
        write_png_gray(args.get("save-canvas") + "/" + name + ".canvas.png", image);
      }
      const at::Tensor probs = c.model->forward(normalize_pixels(image).view({1, 1, canvas, canvas}).to(device))
                                   .softmax(1).squeeze(0).to(at::kCPU, at::kDouble);
      const int64_t best = probs.argmax().item<int64_t>();
      std::vector<double> p(probs.data_ptr<double>(), probs.data_ptr<double>() + probs.numel());
      if (args.flag("json")) {
        std::cout << JsonWriter().add("image", path).add("predicted", best).add("probabilities", p).str() << std::endl;
      } else {
        std::printf("%s: %lld (%.1f%%)\n ", path.c_str(), (long long)best, 100 * p[size_t(best)]);
        for (size_t k = 0; k < p.size(); ++k) std::printf(" %zu:%.3f", k, p[k]);
        std::printf("\n");
      }
    } catch (const Error& e) {
      std::cerr << "error: " << e.what() << "\n";
      ++failures;
    }
  }
  return failures ? 1 : 0;
}

}  // namespace translution::cli
