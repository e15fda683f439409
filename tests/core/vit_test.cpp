#include "nn/vit.h"

#include <atomic>
#include <cmath>
#include <thread>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

#include "cpu/avx512_gemm.h"
#include "cpu/kernel_observer.h"
#include "nn/attention_spec.h"
#include "nn/model_cost.h"
#include "nn/self_attention.h"
#include "tensor_checks.h"
#include "test_switches.h"
#include "util/error.h"

using namespace translution;

namespace {

ViTConfig vit_a(const std::string& model, int64_t patch) {
  ViTConfig c = preset_config("A", model);
  c.patch = patch;
  return c;
}

double millions(int64_t n) { return std::round(double(n) / 1e5) / 10.0; }

}  // namespace

// ICLR Table 2: ViT-A on 84x84 single-channel images, 10 classes.
TEST(ViT, ParameterCountsMatchThePaper) {
  const struct {
    const char* model;
    int64_t patch;
    double paper_millions;
  } rows[] = {{"attention", 12, 2.7}, {"lor", 12, 4.6}, {"translution", 12, 116.2},
              {"attention", 7, 2.7},  {"lor", 7, 8.3},  {"translution", 7, 355.0}};
  for (const auto& row : rows) {
    ViT model(vit_a(row.model, row.patch));
    EXPECT_DOUBLE_EQ(millions(model->parameter_count()), row.paper_millions) << row.model << "/" << row.patch;
  }
}

TEST(ViT, ForwardShapesAndInspection) {
  ViTConfig c = preset_config("tiny", "translution");
  c.image_height = 28;  // non-square 4x3 grid
  c.image_width = 21;
  c.patch = 7;
  c.depth = 2;
  ViT model(c);
  ViTInspection inspection;
  const at::Tensor logits = model->forward(EngineOptions{}, at::randn({3, 1, 28, 21}), &inspection);
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{3, 10}));
  ASSERT_EQ(inspection.attention.size(), 2u);
  EXPECT_EQ(inspection.attention[0].sizes(), (std::vector<int64_t>{3, 1, 13, 13}));
  const auto maps = model->offset_magnitudes();
  ASSERT_EQ(maps.size(), 2u);
  ASSERT_EQ(maps[0].size(), 3u);  // q, k, v
  EXPECT_EQ(maps[0][2].projection, "v");
  EXPECT_EQ(maps[0][0].norms.numel(), 7 * 5 + 3);  // (2H-1)(2W-1) offsets + 3 CLS entries
  EXPECT_GT(maps[0][0].norms.min().item<float>(), 0.0f);
}

TEST(ViT, PlainForwardEqualsInspectedForward) {
  ViTConfig c = preset_config("tiny", "lor");
  c.image_height = c.image_width = 28;
  c.patch = 7;
  c.depth = 2;
  ViT model(c);
  const at::Tensor x = at::randn({2, 1, 28, 28});
  ViTInspection inspection;
  // The plain forward computes the last block for the CLS query alone, the
  // inspected one for every token: float rounding apart (the products' shapes
  // differ), the same logits (exact in double: ClsOnlyLastBlock... below).
  const EngineOptions engine;
  const at::Tensor plain = model->forward(engine, x), inspected = model->forward(engine, x, &inspection);
  EXPECT_LT(test_support::max_relative_error(plain, inspected), 1e-5);
}

// One image, as the studio predicts it (a GPU projects its tokens all at once there): every
// way of computing relative projections gives the same logits and attention, in double.
TEST(ViT, OneImagesForwardIsTheSameWithEveryProjectionAlgorithm) {
  for (const std::string name : {"translution", "lor"}) {
    SCOPED_TRACE(name);
    ViTConfig c = preset_config("tiny", name);
    c.image_height = c.image_width = 28;
    c.patch = 7;
    c.depth = 2;
    ViT model(c);
    model->to(at::kDouble);
    model->eval();
    const at::NoGradGuard no_grad;
    const at::Tensor x = at::randn({1, 1, 28, 28}, at::kDouble);
    const auto forward = [&](ProjectionAlgorithm algorithm, ViTInspection& inspection) {
      return model->forward(with(EngineOptions{}, &EngineOptions::projection, algorithm), x, &inspection);
    };
    ViTInspection per_matrix;
    const at::Tensor reference = forward(ProjectionAlgorithm::PerMatrix, per_matrix);
    for (const auto algorithm : {ProjectionAlgorithm::AllTokens, ProjectionAlgorithm::OffsetBatched}) {
      SCOPED_TRACE(projection_algorithm_name(algorithm));
      ViTInspection other;
      EXPECT_LT(test_support::max_relative_error(forward(algorithm, other), reference), 1e-12);
      for (size_t l = 0; l < per_matrix.attention.size(); ++l)
        EXPECT_LT(test_support::max_relative_error(other.attention[l], per_matrix.attention[l]), 1e-12);
    }
  }
}

TEST(ViT, HybridUsesTheFirstModelForTheFirstBlocks) {
  ViTConfig c = preset_config("tiny", "attention");
  c.image_height = c.image_width = 28;
  c.patch = 7;
  c.depth = 3;
  c.first_model = "translution";
  c.first_blocks = 2;
  ViT model(c);
  EXPECT_EQ(model->block(0).attention().offset_magnitudes().size(), 3u);
  EXPECT_EQ(model->block(1).attention().offset_magnitudes().size(), 3u);
  EXPECT_TRUE(model->block(2).attention().offset_magnitudes().empty());
  EXPECT_EQ(model->forward(EngineOptions{}, at::randn({1, 1, 28, 28})).size(1), 10);
}

// Another thread builds models (drawing from LibTorch's default generator) all the
// while a seeded one is built: the seeded model still gets the weights it gets alone.
TEST(ViT, SeededWeightsDependOnTheSeedAloneWhileAnotherModelIsBuilt) {
  ViTConfig c = preset_config("tiny", "translution");
  c.depth = 2;
  const ViT alone = seeded_vit(c, 11);
  std::atomic<bool> done{false};
  std::atomic<int> built{0};
  std::thread other([&] {
    while (!done.load()) {
      ViT(preset_config("tiny", "attention"));
      built.fetch_add(1);
    }
  });
  while (built.load() == 0) std::this_thread::yield();  // the other thread is drawing
  const ViT beside = seeded_vit(c, 11);
  const int before = built.load();
  done.store(true);
  other.join();
  const auto a = alone->named_parameters(), b = beside->named_parameters();
  for (const auto& p : a) EXPECT_TRUE(at::equal(p.value(), b[p.key()])) << p.key();
  EXPECT_GE(built.load(), before);
}

TEST(ViTConfig, RoundTripsThroughText) {
  ViTConfig c = preset_config("C", "lor-qk");
  c.image_height = 64;
  c.image_width = 48;
  c.patch = 8;
  c.lor_c1 = c.lor_c2 = 4;
  c.lor_shared = false;
  c.model = "lor";
  c.first_model = "attention";
  c.first_blocks = 3;
  const ViTConfig back = ViTConfig::from_text(c.to_text());
  EXPECT_EQ(back, c);
  EXPECT_EQ(back.to_text(), c.to_text());
}

TEST(ViTConfig, RejectsImpossibleConfigurationsWithClearMessages) {
  auto message = [](const std::string& text) {
    try {
      ViTConfig::from_text(text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message("patch=13\n").find("does not divide"), std::string::npos);
  EXPECT_NE(message("model=transformer\n").find("unknown model 'transformer'"), std::string::npos);
  EXPECT_NE(message("depth=0\n").find("depth must be at least 1"), std::string::npos);
  EXPECT_NE(message("heads=two\n").find("heads must be a whole number"), std::string::npos);
  EXPECT_NE(message("colour=blue\n").find("unknown key 'colour'"), std::string::npos);
  EXPECT_NE(message("first_blocks=9\n").find("first_blocks must be between"), std::string::npos);
  EXPECT_NE(message("model=lor-q\nlor_shared=false\n").find("needs a relative value"), std::string::npos);
  // A first model no block uses is still printed: it must name an operator, not drive a terminal.
  EXPECT_NE(message("first_model=\x1b[31mred\n").find("unknown model"), std::string::npos);
  EXPECT_EQ(message("first_model=translution\n"), "");
}

TEST(ViT, RejectsWrongImageShape) {
  ViTConfig c = preset_config("tiny", "attention");
  c.image_height = c.image_width = 28;
  c.patch = 7;
  c.depth = 1;
  ViT model(c);
  EXPECT_THROW(model->forward(EngineOptions{}, at::randn({1, 1, 84, 84})), Error);
}

// The last block for the CLS query alone (the default) against every token's:
// the same logits and the same gradient of every parameter, in double precision,
// for a model of each operator family and a hybrid one.
TEST(ViT, ClsOnlyLastBlockGivesTheFullModelsLogitsAndGradients) {
  for (const std::string model :
       {"attention", "attention-nope", "translution", "translution-v", "translution-abs", "lor", "lor-qk",
        "rel-key", "rel-value", "rel-bias", "gpsa", "rope"}) {
    SCOPED_TRACE(model);
    ViTConfig c = test_support::small_vit_config(model);
    if (model == "rel-value") {  // a hybrid: the last block differs
      c.first_blocks = 1;
      c.first_model = "translution";
    }
    at::manual_seed(7);
    ViT vit(c);
    vit->to(at::kDouble);
    const at::Tensor images = at::randn({3, 1, 28, 21}, at::kDouble);
    const at::Tensor probe = at::randn({3, 10}, at::kDouble);
    std::vector<at::Tensor> params = vit->parameters();
    auto run = [&](const EngineOptions& engine) {
      const at::Tensor logits = vit->forward(engine, images);
      std::vector<at::Tensor> grads =
          torch::autograd::grad({(logits * probe).sum()}, params, {}, false, false, true);
      grads.insert(grads.begin(), logits.detach());
      return grads;
    };
    const EngineOptions cls_only;
    ASSERT_TRUE(cls_only.cls_only_last_block) << "the default";
    const EngineOptions every_token = with(cls_only, &EngineOptions::cls_only_last_block, false);
    {
      at::NoGradGuard no_grad;  // prediction's path: the engine's inference passes
      EXPECT_LT(
          test_support::max_relative_error(vit->forward(cls_only, images), vit->forward(every_token, images)),
          1e-12)
          << "logits without gradients";
    }
    const std::vector<at::Tensor> cls = run(cls_only);
    const std::vector<at::Tensor> all = run(every_token);
    const auto names = vit->named_parameters();
    for (size_t n = 0; n < cls.size(); ++n) {
      const std::string what = n == 0 ? "logits" : "gradient of " + names[n - 1].key();
      ASSERT_EQ(cls[n].defined(), all[n].defined()) << what;
      if (cls[n].defined()) {
        EXPECT_LT(test_support::max_relative_error(cls[n], all[n]), 1e-12) << what;
      }
    }
  }
}

// The default forward does run the last block for the CLS query alone: one image's
// per-matrix products go to the row kernel one call per matrix with pairs, and
// the CLS query's pairs use 2 of each bank's matrices (every token's use all).
TEST(ViT, ClsOnlyLastBlockMultipliesOnlyTheMatricesItsPairsUse) {
  SKIP_WITHOUT_AVX512_KERNEL(avx512_gemm_available());
  ViTConfig c = test_support::small_vit_config("translution");
  c.depth = 1;  // its one block is the last
  at::manual_seed(5);
  ViT vit(c);
  at::NoGradGuard no_grad;
  // Every product on this thread, where the counter counts.
  const EngineOptions one = test_support::threads_options(1);
  const at::Tensor image = at::randn({1, 1, 28, 21});
  auto calls = [&](const EngineOptions& engine) {
    const KernelCounts kernels;
    vit->forward(engine, image);
    return kernels[Kernel::Avx512Gemm];
  };
  const int64_t cls = calls(one);
  const int64_t every = calls(with(one, &EngineOptions::cls_only_last_block, false));
  const int64_t E = model_cost(EngineOptions{}, c).relative_entries;  // 7 x 5 offsets + 3 CLS entries
  EXPECT_EQ(every - cls, 3 * (E - 2)) << cls << " calls against " << every;
}

TEST(ModelCost, ClsOnlyLastBlockSkipsTheOtherQueriesWork) {
  const double N = 50, C = 192, D = 192, H = 3, mlp = 768;
  // The other 49 queries' attention rows, output projection and MLP.
  const double other_queries = (N - 1) * (2 * N * D + D * C + 2 * C * mlp);
  // Self-attention's CLS query goes through W^k and W^v itself and meets the
  // inputs (3 C D + 2 H N C) in place of every token's q, k and v projected and
  // its own logits and weighted values (3 N C D + 2 N D).
  // That is in a batch; one image projects every token (self_attention_reassociates).
  const ModelCost sa = model_cost(EngineOptions{}, vit_a("attention", 12));
  EXPECT_DOUBLE_EQ(sa.exact_macs - sa.cls_only_batch_macs,
                   other_queries + 3 * N * C * D + 2 * N * D - (3 * C * D + 2 * H * N * C));
  EXPECT_DOUBLE_EQ(sa.exact_macs - sa.cls_only_macs, other_queries);
  EXPECT_EQ(sa.cls_only_unread_weights, 0);
  // The baselines' one qkv product still projects every token.
  const ModelCost rope = model_cost(EngineOptions{}, vit_a("rope", 12));
  EXPECT_DOUBLE_EQ(rope.exact_macs - rope.cls_only_batch_macs, other_queries);
  // Translution's CLS query uses two of the 172 entries (CLS to itself, out of
  // CLS): the other 170 matrices of q, k and v in the last block go unread.
  const ModelCost tr = model_cost(EngineOptions{}, vit_a("translution", 12));
  EXPECT_EQ(tr.cls_only_unread_weights, 3 * 170 * 192 * 192);
  EXPECT_DOUBLE_EQ(tr.exact_macs - tr.cls_only_macs, other_queries + 3 * (N - 1) * N * C * D);
  EXPECT_DOUBLE_EQ(tr.cls_only_batch_macs, tr.cls_only_macs);
  // LoR's CLS query, in a batch, meets the unprojected inputs under each of its two
  // entries (CLS to itself, out of CLS): q and its low-rank vector, through the key
  // side (W1k Bk[g] per head, W^k), each entry's logits and weighted inputs, then
  // W1v Bv[g] W2v and W^v, and the output projection; against the plain path's
  // projections of every token and 50 pairs.
  const ModelCost lor = model_cost(EngineOptions{}, vit_a("lor", 12));
  const double c = 24, S = 2, dh = 64;
  const double reassociated = D * C + 3 * C * D + C * c + S * c * c + S * (c * c + H * c * C) +
                              2 * S * H * N * C + S * H * (C * c + c * c + c * dh);
  const double plain = D * C + 2 * N * D + (1 + 2 * N) * C * D + (C * c + N * c * c) +
                       (N * C * c + N * c * c) + N * c + (N * C * c + N * c * c + N * H * c + H * c * dh);
  EXPECT_DOUBLE_EQ(lor.cls_only_macs - lor.cls_only_batch_macs, plain - reassociated);
}

// A few queries' outputs take the reassociated path only where it is the cheaper one.
TEST(SelfAttention, ReassociatesOnlyWhereItSavesWork) {
  const AttentionShape shape{192, 3, 64};
  const EngineOptions engine;
  EXPECT_TRUE(self_attention_reassociates(engine, shape, 50, 1, 32));
  EXPECT_FALSE(self_attention_reassociates(engine, shape, 50, 1, 1));  // one image: the plain products
  // Every query: project the keys and values once.
  EXPECT_FALSE(self_attention_reassociates(engine, shape, 50, 50, 32));
  EXPECT_FALSE(self_attention_reassociates(engine, shape, 50, 40, 32));
  EXPECT_FALSE(self_attention_reassociates(engine, shape, 1, 1, 32));
  EXPECT_FALSE(
      self_attention_reassociates(with(engine, &EngineOptions::query_reassociation, false), shape, 50, 1, 32))
      << "switched off";
}

// One image's first query takes the plain products (the exactness suite's
// batches of two take the reassociated path): the same output row and gradients
// as every token's forward, in double.
TEST(SelfAttention, OneImagesFirstQueryMatchesItsFullForwardRow) {
  at::manual_seed(3);
  const AttentionShape shape{12, 3, 4};
  auto module = make_attention(attention_choice("attention").spec, shape, TokenLayout::grid(2, 3, true));
  module->to(at::kDouble);
  const at::Tensor x = at::randn({1, 7, 12}, at::kDouble).requires_grad_(true);
  const at::Tensor probe = at::randn({1, 1, 12}, at::kDouble);
  std::vector<at::Tensor> inputs{x};
  for (const auto& p : module->parameters()) inputs.push_back(p);
  const EngineOptions engine;
  const at::Tensor first = module->forward_queries(engine, x, 1),
                   full = module->forward(engine, x).narrow(1, 0, 1);
  EXPECT_LT(test_support::max_relative_error(first, full), 1e-12);
  const auto g_first = torch::autograd::grad({(first * probe).sum()}, inputs);
  const auto g_full = torch::autograd::grad({(full * probe).sum()}, inputs);
  for (size_t i = 0; i < inputs.size(); ++i)
    EXPECT_LT(test_support::max_relative_error(g_first[i], g_full[i]), 1e-12) << i;
}

TEST(ModelCost, TranslutionDoesNTimesTheProjectionWorkOfSelfAttention) {
  // Per relative projection N^2 C C' against N C C': the difference is exactly
  // 3 (N^2 - N) C C' per layer.
  const ModelCost sa = model_cost(EngineOptions{}, vit_a("attention", 12)),
                  tr = model_cost(EngineOptions{}, vit_a("translution", 12));
  const double N = 50, C = 192;
  EXPECT_DOUBLE_EQ(tr.exact_macs - sa.exact_macs, 6 * 3 * (N * N - N) * C * C);
  EXPECT_EQ(tr.relative_entries, 13 * 13 + 3);
  // Self-attention ViT-A/12 is about 140 M multiply-adds (the paper reports 140.5 M FLOPs).
  EXPECT_NEAR(sa.exact_macs / 1e6, 140.5, 1.5);
}
