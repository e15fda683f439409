// The parameter count from a config alone against the models the engine builds,
// for every operator and the shapes that change which parts exist.
#include "nn/model_size.h"

#include <gtest/gtest.h>

#include "nn/attention_spec.h"
#include "nn/vit.h"
#include "util/error.h"

namespace translution {
namespace {

std::vector<ViTConfig> variants(const std::string& model) {
  ViTConfig base = preset_config("tiny", model);
  base.image_height = base.image_width = 28;
  base.patch = 7;
  base.depth = 2;
  base.dim = 8;
  base.heads = 2;
  base.head_dim = 4;
  base.mlp_dim = 12;
  std::vector<ViTConfig> out = {base};
  ViTConfig one_head = base;  // one head as wide as the model: no output projection
  one_head.heads = 1;
  one_head.head_dim = 8;
  out.push_back(one_head);
  ViTConfig lor = base;
  lor.lor_c1 = 3;
  lor.lor_c2 = 2;
  lor.lor_shared = false;
  out.push_back(lor);
  ViTConfig wide = base;  // a 4 x 2 grid of 7 x 7 patches, 3 channels, 5 classes
  wide.image_height = 28;
  wide.image_width = 14;
  wide.channels = 3;
  wide.classes = 5;
  out.push_back(wide);
  ViTConfig hybrid = base;
  hybrid.first_model = "translution";
  hybrid.first_blocks = 1;
  out.push_back(hybrid);
  return out;
}

TEST(ModelSize, CountsTheParametersEveryBuiltModelHas) {
  int compared = 0;
  for (const AttentionChoice& choice : attention_choices())
    for (const ViTConfig& c : variants(choice.name)) {
      SCOPED_TRACE(c.to_text());
      ViT model{nullptr};
      try {
        model = ViT(c);
      } catch (const Error&) {
        continue;  // a combination the operator refuses (e.g. LoR-Q without shared terms: no values)
      }
      EXPECT_EQ(parameter_count(c), model->parameter_count());
      ++compared;
    }
  EXPECT_GE(compared, int(attention_choices().size()) * 4);
}

TEST(ModelSize, ThePapersViTA12CountsWithoutBuildingAnything) {
  ViTConfig c = preset_config("A", "translution");
  c.image_height = c.image_width = 84;
  c.patch = 12;
  c.channels = 1;
  c.classes = 10;
  EXPECT_NEAR(double(parameter_count(c)) / 1e6, 116.2, 0.05);  // Table 2
  c.patch = 7;
  EXPECT_NEAR(double(parameter_count(c)) / 1e6, 355.0, 0.05);
}

TEST(ModelSize, AModelTooLargeToCountIsAnErrorNotAnOverflow) {
  ViTConfig c = preset_config("tiny", "translution-abs");
  c.image_height = c.image_width = 100000;  // N^2 entries overflow 64 bits
  c.patch = 1;
  EXPECT_THROW(parameter_count(c), Error);
  ViTConfig deep = preset_config("tiny", "attention");
  deep.depth = 100000;
  EXPECT_GT(parameter_count(deep), 100000 * 4 * 64);  // large but countable, at once
}

}  // namespace
}  // namespace translution
