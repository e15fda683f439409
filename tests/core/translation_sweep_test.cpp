// The translation sweep measures what it says, position by position.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <fstream>

#include "data/canvas_dataset.h"
#include "image/heat_map.h"
#include "temp_dir.h"
#include "train/translation_sweep.h"

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
  c.dim = 16, c.heads = 2, c.head_dim = 8, c.mlp_dim = 16;
  at::manual_seed(3);
  ViT model(c);
  const MnistDigits test = load_mnist(mnist_dir(), Split::Test);
  SweepOptions o;
  o.digits = 12;
  o.stride = 5;
  const SweepResult r = translation_sweep(model, test, o, c10::kCPU);
  ASSERT_EQ(r.positions, (std::vector<int64_t>{0, 5, 8}));
  model->eval();
  at::NoGradGuard no_grad;
  for (size_t yi = 0; yi < 3; ++yi)
    for (size_t xi = 0; xi < 3; ++xi) {
      std::vector<at::Tensor> images;
      for (int64_t i = 0; i < 12; ++i)
        images.push_back(normalize_pixels(compose_canvas(test.images[i], 36, {r.positions[xi], r.positions[yi]})));
      const at::Tensor probs = model->forward(at::stack(images).unsqueeze(1)).softmax(1);
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
