// `translution attribute`
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/json_line.h"
#include "cli/memory_check.h"
#include "cli/picture_canvas.h"
#include "data/canvas_dataset.h"
#include "image/attribution_picture.h"
#include "image/png_io.h"
#include "infer/attribution.h"
#include "train/checkpoint.h"
#include "train/checkpoint_peek.h"
#include "util/device.h"
#include "util/error.h"
#include "util/output_path.h"

namespace translution::cli {
namespace {

struct AttributeOptions {
  std::string checkpoint, method = "ig", image, at, out, device = "auto";
  int64_t target = -1, steps = 32, occluder = 0;  // occluder 0: the model's patch
  bool force = false, json = false;
};

// DIR is made where missing; a DIR that names anything but a folder is refused.
void prepare_out_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!std::filesystem::is_directory(dir))
    throw Error(dir + ": --out must be a folder" +
                (ec ? " (" + ec.message() + ")" : std::string(", not a file")));
}

std::string output_stem(const AttributeOptions& o, int64_t occluder) {
  std::string name = std::filesystem::path(o.image).stem().string();
  if (name.empty()) name = "image";
  return o.out + "/" + name + (o.method == "ig" ? ".ig" : ".occlusion-" + std::to_string(occluder));
}

// The memory of a forward with gradients over `batch` canvases: a training step's plan (it also
// counts weight gradients and AdamW, which attribution does not hold: an upper bound).
void check_attribution_memory(const EngineOptions& engine, const AttributeOptions& o, int64_t batch,
                              const c10::Device& device) {
  const std::optional<CheckpointPeek> peek = peek_checkpoint(o.checkpoint);
  if (!peek) return;  // the loader names what is wrong with the file
  MemoryPlan plan = checkpoint_plan(*peek, batch);
  plan.engine = engine;
  plan.training = o.method == "ig";
  check_plan(o.force, plan, device);
}

void report(const AttributeOptions& o, const Placement& at, const Attribution& a, int64_t predicted,
            double limit, double seconds, const std::string& stem) {
  const bool ig = o.method == "ig";
  if (o.json) {
    nlohmann::ordered_json out = {
        {"image", o.image},  {"at", {at.x, at.y}},     {"method", ig ? "integrated-gradients" : "occlusion"},
        {"class", a.target}, {"predicted", predicted}, {"logit", a.logit()}};
    if (ig) {
      out["steps"] = a.steps;
      out["sum"] = a.total();
      out["logit_difference"] = a.logit_difference();
      out["gap"] = a.completeness_gap();
    } else {
      out["occluder"] = a.occluder;
      out["largest_drop"] = a.map.max().item<double>();
      out["largest_rise"] = 0.0 - a.map.min().item<double>();  // no "-0"
    }
    out["map_limit"] = limit;
    out["seconds"] = seconds;
    out["csv"] = stem + ".csv";
    out["png"] = stem + ".png";
    std::cout << json_line(out) << std::endl;
    return;
  }
  std::printf("%s at %lld,%lld: class %lld (predicted %lld), logit %.3f; ", o.image.c_str(), (long long)at.x,
              (long long)at.y, (long long)a.target, (long long)predicted, a.logit());
  if (ig)
    std::printf(
        "integrated gradients, %lld steps: attributions sum to %.3f, logit difference from the black canvas "
        "%.3f, gap %.2f%%",
        (long long)a.steps, a.total(), a.logit_difference(), 100 * a.completeness_gap());
  else
    std::printf("occlusion, %lld px tiles: largest drop %.3f, largest rise %.3f", (long long)a.occluder,
                a.map.max().item<double>(), 0.0 - a.map.min().item<double>());
  std::printf(" (%.2f s); wrote %s.csv, %s.png\n", seconds, stem.c_str(), stem.c_str());
}

int attribute(const AttributeOptions& o) {
  const c10::Device device = parse_device(o.device);
  const EngineOptions engine;  // attribute has no flags for them: the defaults
  check_attribution_memory(
      engine, o, o.method == "ig" ? IntegratedGradientsOptions{}.batch : OcclusionOptions{}.batch, device);
  Checkpoint c = load_checkpoint(o.checkpoint, device);
  if (c.config.image_height != c.config.image_width || c.config.channels != 1)
    throw Error(o.checkpoint + ": attribute needs a model of square one-channel images");
  const int64_t occluder = o.occluder ? o.occluder : c.config.patch;
  if (occluder > c.config.image_height)
    throw Error("--occluder must be 1 to " + std::to_string(c.config.image_height) +
                " (the canvas's side), got " + std::to_string(occluder));
  if (o.target >= c.config.classes)
    throw Error("--class must be 0 to " + std::to_string(c.config.classes - 1) +
                " (the model's classes), got " + std::to_string(o.target));
  const Placement at = parse_at(o.at, c.config.image_height);
  const at::Tensor canvas = compose_canvas(read_digit(o.image), c.config.image_height, at);  // [S, S]
  prepare_out_dir(o.out);  // once every input is read: a refused run makes no folder
  const std::string stem = output_stem(o, occluder);
  for (const char* suffix : {".csv", ".png"}) checked_output_path(stem + suffix);
  refuse_inputs_as_outputs({o.checkpoint, o.image}, {stem + ".csv", stem + ".png"});
  c.model->eval();
  const auto start = std::chrono::steady_clock::now();
  std::optional<Attribution> a;
  if (o.method == "ig") {
    IntegratedGradientsOptions options;
    options.target = o.target;
    options.steps = o.steps;
    a = integrated_gradients(engine, c.model, device, canvas, options);
  } else {
    OcclusionOptions options;
    options.target = o.target;
    options.occluder = occluder;
    a = occlusion(engine, c.model, device, canvas, options);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double limit = symmetric_limit(a->map);
  const at::Tensor picture =
      attribution_picture(canvas, a->map, limit, 4);  // made before either file is written
  write_attribution_csv(stem + ".csv", a->map);
  write_png_rgb(stem + ".png", picture);
  report(o, at, *a, a->logits.argmax().item<int64_t>(), limit, seconds, stem);
  return 0;
}

}  // namespace

void add_attribute_command(CLI::App& root, Runners& runners) {
  CLI::App* app = root.add_subcommand("attribute",
                                      "which pixels of a digit a class rests on: integrated gradients "
                                      "or occlusion against a black canvas");
  auto o = std::make_shared<AttributeOptions>();
  app->add_option("image", o->image, "the picture (PNG or JPEG), prepared and placed as predict does")
      ->type_name("IMAGE")
      ->required();
  app->add_option("--at", o->at, "the digit frame's top-left pixel (default: centred)")->type_name("X,Y");
  app->add_option("--checkpoint", o->checkpoint, "the model")->required();
  add_choice(*app, "--method", o->method, {"ig", "occlusion"},
             "ig: integrated gradients; occlusion: tiles blacked out");
  app->add_option("--out", o->out,
                  "writes NAME.ig.csv and .png (or NAME.occlusion-PX.*) here, made if missing")
      ->type_name("DIR")
      ->required();
  app->add_option("--class", o->target, "the class attributed (default: the predicted one)")
      ->type_name("K")
      ->check(at_least("--class", 0));
  CLI::Option* steps = app->add_option("--steps", o->steps, "ig: points on the path from the black canvas")
                           ->check(in_range("--steps", 1, 100000))
                           ->capture_default_str();
  CLI::Option* occluder =
      app->add_option("--occluder", o->occluder, "occlusion: the tile's side (default: the model's patch)")
          ->type_name("PX")
          ->check(at_least("--occluder", 1));
  add_device(*app, o->device);
  app->add_flag("--force", o->force, kForceHelp);
  app->add_flag("--json", o->json, "print one JSON object");
  runners[app] = [o, steps, occluder] {
    if (o->method == "ig" && occluder->count())
      throw Error("--occluder is for --method occlusion; ig takes --steps");
    if (o->method == "occlusion" && steps->count())
      throw Error("--steps is for --method ig; occlusion takes --occluder");
    return attribute(*o);
  };
}

}  // namespace translution::cli
