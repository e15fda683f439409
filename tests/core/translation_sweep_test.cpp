// The translation sweep measures what it says, position by position.
#include "train/translation_sweep.h"

#include <filesystem>
#include <fstream>
#include <iterator>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "data/canvas_dataset.h"
#include "image/heat_map.h"
#include "temp_dir.h"
#include "util/error.h"

namespace translution {
namespace {

using test_support::mnist_dir;
using test_support::TempDir;

TEST(TranslationSweep, PositionsCoverTheCanvasToTheLastPixel) {
  EXPECT_EQ(sweep_positions(84, 28, 4).size(), 15u);
  EXPECT_EQ(sweep_positions(84, 28, 4).back(), 56);
  const auto p = sweep_positions(85, 28, 4);
  EXPECT_EQ(p.back(), 57);
  EXPECT_EQ(p[p.size() - 2], 56);
  EXPECT_EQ(sweep_positions(28, 28, 4), std::vector<int64_t>{0});
}

TEST(TranslationSweep, EachCellIsTheModelsAccuracyAtThatPosition) {
  ASSERT_FALSE(mnist_dir().empty());
  ViTConfig c = preset_config("tiny", "lor");
  c.image_height = c.image_width = 36;
  c.patch = 6;
  c.depth = 1;
  c.dim = 16;
  c.heads = 2;
  c.head_dim = 8;
  c.mlp_dim = 16;
  at::manual_seed(3);
  ViT model(c);
  const MnistDigits test = load_mnist(mnist_dir(), Split::Test);
  SweepOptions o;
  o.digits = 12;
  o.stride = 5;
  const EngineOptions engine;
  const SweepResult r = translation_sweep(engine, model, test, o, c10::kCPU);
  ASSERT_EQ(r.positions, (std::vector<int64_t>{0, 5, 8}));
  model->eval();
  at::NoGradGuard no_grad;
  for (size_t yi = 0; yi < 3; ++yi)
    for (size_t xi = 0; xi < 3; ++xi) {
      std::vector<at::Tensor> images;
      for (int64_t i = 0; i < 12; ++i)
        images.push_back(
            normalize_pixels(compose_canvas(test.images[i], 36, {r.positions[xi], r.positions[yi]})));
      const at::Tensor probs = model->forward(engine, at::stack(images).unsqueeze(1)).softmax(1);
      const at::Tensor labels = test.labels.narrow(0, 0, 12);
      EXPECT_NEAR(r.accuracy[int64_t(yi)][int64_t(xi)].item<double>(),
                  probs.argmax(1).eq(labels).to(at::kDouble).mean().item<double>(), 1e-12);
      EXPECT_NEAR(r.true_probability[int64_t(yi)][int64_t(xi)].item<double>(),
                  probs.gather(1, labels.unsqueeze(1)).mean().item<double>(), 1e-6);
    }
  TempDir dir;
  write_sweep_csv(dir.file("s.csv"), r);
  std::ifstream in(dir.file("s.csv"));
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) ++lines;
  EXPECT_EQ(lines, 1 + 9);
}

// A sweep's table and maps are one set: each lands whole with no temporary left beside it, and
// when one cannot be written (its path is a folder) the earlier set stands unchanged.
TEST(TranslationSweep, ItsFilesAreWrittenAsOneSet) {
  SweepResult r;
  r.positions = {0, 4};
  r.digits = 3;
  r.accuracy = at::tensor({1.0, 0.5, 0.25, 0.0}, at::kDouble).view({2, 2});
  r.true_probability = r.accuracy * 0.5;
  TempDir dir;
  const std::string prefix = dir.file("s");
  const SweepFiles files = sweep_files(prefix);
  EXPECT_EQ(files.csv, prefix + ".csv");
  EXPECT_EQ(files.probability_png, prefix + "-probability.png");
  write_sweep_files(prefix, r);
  const auto read = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string table = read(files.csv), map = read(files.accuracy_png);
  EXPECT_EQ(table.substr(0, 32), "x,y,accuracy,true_probability\n0,");
  EXPECT_EQ(map.substr(1, 3), "PNG");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 3);

  std::filesystem::remove(files.probability_png);
  std::filesystem::create_directory(files.probability_png);
  r.accuracy.fill_(0.75);
  EXPECT_THROW(write_sweep_files(prefix, r), Error);
  EXPECT_EQ(read(files.csv), table);
  EXPECT_EQ(read(files.accuracy_png), map);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 3);
}

TEST(TranslationSweep, ProgressivePassesAreNeverFinerThanTheRequest) {
  auto same = [](const SweepOptions& a, const SweepOptions& b) {
    return a.digits == b.digits && a.stride == b.stride;
  };
  const auto passes = progressive_passes({100, 2});
  ASSERT_EQ(passes.size(), 2u);
  EXPECT_TRUE(same(passes[0], {20, 6}));
  EXPECT_TRUE(same(passes[1], {100, 2}));
  EXPECT_TRUE(
      same(progressive_passes({10, 2})[0], {10, 6}));  // fewer digits than the coarse pass: all of them
  EXPECT_TRUE(
      same(progressive_passes({100, 8})[0], {20, 8}));  // a coarser stride than the coarse pass: that one
  const auto one = progressive_passes({5, 14});         // already coarse: one pass
  ASSERT_EQ(one.size(), 1u);
  EXPECT_TRUE(same(one[0], {5, 14}));
}

TEST(TranslationSweep, AProgressiveSweepEndsWithTheOneShotMaps) {
  ASSERT_FALSE(mnist_dir().empty());
  std::vector<SweepModel> models;
  at::manual_seed(5);
  for (const char* method : {"lor", "attention"}) {
    ViTConfig c = preset_config("tiny", method);
    c.image_height = c.image_width = 36;
    c.patch = 6;
    c.depth = 1;
    c.dim = 16;
    c.heads = 2;
    c.head_dim = 8;
    c.mlp_dim = 16;
    models.push_back({ViT(c), c10::kCPU, EngineOptions{}});
  }
  const MnistDigits test = load_mnist(mnist_dir(), Split::Test);
  const SweepOptions requested{12, 2};
  const auto passes = progressive_passes(requested, {4, 5});
  ASSERT_EQ(passes.size(), 2u);
  std::vector<size_t> shown_passes;
  std::vector<std::vector<SweepResult>> shown;
  std::vector<std::pair<size_t, int64_t>> last_progress(2, {0, 0});
  const auto final_results = progressive_sweep(
      models, test, passes,
      [&](size_t pass, const std::vector<SweepResult>& results) {
        shown_passes.push_back(pass);
        shown.push_back(results);
      },
      [&](size_t pass, int64_t done, int64_t total) {
        EXPECT_LE(done, total);
        if (done == total) last_progress[pass] = {pass, total};
      });
  ASSERT_EQ(shown_passes, (std::vector<size_t>{0, 1}));
  // The coarse pass: 4 digits at positions 0, 5 and the last (8), shown before the fine pass ran.
  ASSERT_EQ(shown[0].size(), 2u);
  EXPECT_EQ(shown[0][0].positions, (std::vector<int64_t>{0, 5, 8}));
  EXPECT_EQ(shown[0][0].digits, 4);
  EXPECT_EQ(last_progress[0].second, 2 * 9);   // two models, 3 x 3 positions
  EXPECT_EQ(last_progress[1].second, 2 * 25);  // two models, 5 x 5 positions
  // The last pass is the one-shot sweep, model by model, to the last bit.
  ASSERT_EQ(final_results.size(), 2u);
  for (size_t m = 0; m < models.size(); ++m) {
    const SweepResult one_shot =
        translation_sweep(models[m].engine, models[m].model, test, requested, c10::kCPU);
    EXPECT_EQ(final_results[m].positions, one_shot.positions);
    EXPECT_EQ(final_results[m].digits, 12);
    EXPECT_TRUE(at::equal(final_results[m].accuracy, one_shot.accuracy)) << "model " << m;
    EXPECT_TRUE(at::equal(final_results[m].true_probability, one_shot.true_probability)) << "model " << m;
    EXPECT_TRUE(at::equal(shown[1][m].accuracy, one_shot.accuracy));
  }
}

TEST(TranslationSweep, AFailingModelStopsTheSweepWithItsError) {
  ASSERT_FALSE(mnist_dir().empty());
  ViTConfig c = preset_config("tiny", "attention");
  c.image_height = c.image_width = 36;
  c.patch = 6;
  c.depth = 1;
  c.dim = 16;
  c.heads = 2;
  c.head_dim = 8;
  c.mlp_dim = 16;
  const std::vector<SweepModel> models{{ViT(c), c10::kCPU, EngineOptions{}},
                                       {ViT(c), c10::kCPU, EngineOptions{}}};
  const MnistDigits test = load_mnist(mnist_dir(), Split::Test);
  int shown = 0;
  EXPECT_THROW(progressive_sweep(
                   models, test, progressive_passes({12, 2}, {4, 5}),
                   [&](size_t, const std::vector<SweepResult>&) { ++shown; },
                   [](size_t pass, int64_t, int64_t) {
                     if (pass == 1) throw Error("cancelled");
                   }),
               Error);
  EXPECT_EQ(shown, 1);  // the coarse pass was shown; the stopped one never is
}

TEST(HeatMap, RampEndsAndBarLayout) {
  const at::Tensor ends = colour_ramp(at::tensor({0.0f, 1.0f}));
  EXPECT_EQ(ends[0][0].item<int>(), 68);
  EXPECT_EQ(ends[0][2].item<int>(), 84);
  EXPECT_EQ(ends[1][0].item<int>(), 253);
  EXPECT_EQ(ends[1][1].item<int>(), 231);
  const at::Tensor map = heat_map_rgb(at::rand({3, 5}), 0, 1, 10, 12);
  EXPECT_EQ(map.sizes(), (at::IntArrayRef{30, 50 + 6 + 12, 3}));
}

}  // namespace
}  // namespace translution
