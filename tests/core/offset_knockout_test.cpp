// Offset knockout against the per-pair reference: a knocked-out model's attention
// must equal, in double precision, the paper's equations with the knocked-out
// W_delta replaced pair by pair (naive_attention's NaiveKnockout, which says which
// matrix each pair reads from the offsets alone, never through core's tables).
#include "infer/offset_knockout.h"

#include <set>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

#include "infer/offset_importance.h"
#include "naive_attention.h"
#include "tensor_checks.h"
#include "util/error.h"

using namespace translution;
using test_support::max_relative_error;

namespace {

// A 3 x 4 patch grid (offsets dy in [-2, 2], dx in [-3, 3]) plus CLS, two layers.
ViTConfig small_config(const std::string& model) {
  ViTConfig c = preset_config("tiny", model);
  c.image_height = 9;
  c.image_width = 12;
  c.patch = 3;
  c.depth = 2;
  c.dim = 6;
  c.heads = 2;
  c.head_dim = 4;
  c.mlp_dim = 8;
  c.lor_c1 = 2;
  c.lor_c2 = 3;
  return c;
}

ViT small_model(const std::string& model, at::ScalarType dtype = at::kDouble) {
  at::manual_seed(77);
  ViT m(small_config(model));
  m->to(dtype);
  return m;
}

std::shared_ptr<AttentionModule> attention_of(const ViT& model, int64_t layer) {
  const auto modules = model->named_modules();
  return std::dynamic_pointer_cast<AttentionModule>(modules["block" + std::to_string(layer) + ".attention"]);
}

// The paper's entry of an offset, from the equation's ordering alone.
int64_t paper_entry(const TokenLayout& l, const Offset& o) {
  return (o.dy + l.height - 1) * (2 * l.width - 1) + (o.dx + l.width - 1);
}

// What the reference replaces in one layer of `model` under knockout `k`.
test_support::NaiveKnockout naive_knockout(const ViT& model, int64_t layer, const OffsetKnockout& k) {
  const TokenLayout l = model->config().token_layout();
  const int64_t R = (2 * l.height - 1) * (2 * l.width - 1);
  std::set<int64_t> entries;
  for (const Offset& o : k.offsets) entries.insert(paper_entry(l, o));
  if (k.cls_self) entries.insert(R);
  if (k.cls_in) entries.insert(R + 1);
  if (k.cls_out) entries.insert(R + 2);
  const bool layer_chosen = k.layers.empty() || std::count(k.layers.begin(), k.layers.end(), layer) > 0;
  const bool role_chosen[3] = {k.q, k.k, k.v};
  test_support::NaiveKnockout naive;
  naive.knocked = [=](int role, int64_t entry) {
    return layer_chosen && role_chosen[role] && entries.count(entry) > 0;
  };
  const auto parameters = attention_of(model, layer)->named_parameters();
  for (int role = 0; role < 3; ++role) {
    const at::Tensor* bank = parameters.find(std::string("w") + "qkv"[role]);
    if (!bank) continue;
    // The offset matrices are the first R entries of every bank, mirrored or not.
    naive.replacement[size_t(role)] = k.replacement == OffsetKnockout::Replacement::Zero
                                          ? at::zeros({bank->size(1), bank->size(2)}, bank->options())
                                          : bank->narrow(0, 0, R).detach().mean(0);
  }
  return naive;
}

struct KnockoutCase {
  std::string model;
  OffsetKnockout knockout;
};

// Every layer of the knocked-out copy against the reference over the original's
// weights: forward, and the input's gradient. The knockout must also change the
// layers it touches (a knockout that did nothing would match a reference that
// replaced nothing).
void expect_matches_reference(const KnockoutCase& c) {
  SCOPED_TRACE(c.model + ": " + c.knockout.describe());
  ViT model = small_model(c.model);
  ViT knocked = knocked_out_copy(model, c.knockout);
  const ViTConfig& config = model->config();
  const AttentionShape shape{config.dim, config.heads, config.head_dim};
  for (int64_t layer = 0; layer < config.depth; ++layer) {
    SCOPED_TRACE("layer " + std::to_string(layer));
    const AttentionSpec spec = config.attention_spec(layer);
    const at::Tensor x = at::randn({2, config.tokens(), config.dim}, at::kDouble).requires_grad_(true);
    const at::Tensor probe = at::randn({2, config.tokens(), config.dim}, at::kDouble);
    const at::Tensor fast = attention_of(knocked, layer)->forward(EngineOptions{}, x);
    const auto original = attention_of(model, layer);
    const test_support::NaiveKnockout rule = naive_knockout(model, layer, c.knockout);
    const at::Tensor naive =
        test_support::naive_attention(*original, spec, shape, config.token_layout(), x, rule);
    EXPECT_LT(max_relative_error(fast, naive), 1e-9) << "forward";
    const bool touched = c.knockout.layers.empty() ||
                         std::count(c.knockout.layers.begin(), c.knockout.layers.end(), layer) > 0;
    const at::Tensor plain = test_support::naive_attention(*original, spec, shape, config.token_layout(), x);
    if (touched)
      EXPECT_GT(max_relative_error(fast, plain), 1e-6) << "the knockout changed nothing";
    else
      EXPECT_LT(max_relative_error(fast, plain), 1e-12) << "a layer not chosen changed";
    const auto grad_fast = torch::autograd::grad({(fast * probe).sum()}, {x});
    const auto grad_naive = torch::autograd::grad({(naive * probe).sum()}, {x});
    EXPECT_LT(max_relative_error(grad_fast[0], grad_naive[0]), 1e-9) << "input gradient";
  }
}

OffsetKnockout knockout_of(std::vector<Offset> offsets, bool q, bool k, bool v, OffsetKnockout::Replacement r,
                           bool cls = false, std::vector<int64_t> layers = {}) {
  OffsetKnockout out;
  out.offsets = std::move(offsets);
  out.q = q;
  out.k = k;
  out.v = v;
  out.replacement = r;
  out.cls_self = out.cls_in = out.cls_out = cls;
  out.layers = std::move(layers);
  return out;
}

constexpr auto kZero = OffsetKnockout::Replacement::Zero;
constexpr auto kMean = OffsetKnockout::Replacement::Mean;

}  // namespace

// One asymmetric offset, key alone and then all three: the key bank is stored
// mirrored, so a knockout that forgot the mirror would replace Wk[-delta].
TEST(OffsetKnockout, AsymmetricOffsetMatchesReferenceThroughTheKeyMirror) {
  for (const auto r : {kZero, kMean}) {
    expect_matches_reference({"translution", knockout_of({{1, -2}}, false, true, false, r)});
    expect_matches_reference({"translution", knockout_of({{1, -2}}, true, true, true, r)});
    expect_matches_reference({"translution-qk", knockout_of({{-2, 3}}, false, true, false, r)});
  }
}

TEST(OffsetKnockout, RectangleWithClsMatchesReferenceAcrossOperators) {
  const TokenLayout layout = small_config("translution").token_layout();
  const std::vector<Offset> rectangle = offsets_in_rectangle(layout, {1, 2}, {-1, 0});
  for (const std::string model :
       {"translution", "translution-v", "translution-kv", "lor", "rope-translution"})
    for (const auto r : {kZero, kMean})
      expect_matches_reference({model, knockout_of(rectangle, true, true, true, r, true)});
}

TEST(OffsetKnockout, OffsetsBeyondADistanceInOneLayerMatchReference) {
  const TokenLayout layout = small_config("translution").token_layout();
  const std::vector<Offset> far = offsets_beyond(layout, 2.0);
  for (const std::string model : {"translution", "lor", "translution-qk"})
    for (const auto r : {kZero, kMean})
      expect_matches_reference({model, knockout_of(far, true, true, true, r, false, {1})});
  // q and v alone, only the CLS matrices: Appendix H's three, with "in" and "out" swapped for keys.
  expect_matches_reference({"translution", knockout_of({}, true, false, true, kMean, true)});
  expect_matches_reference({"lor-kv", knockout_of({}, false, true, false, kZero, true)});
}

TEST(OffsetKnockout, CopyLeavesTheOriginalUntouched) {
  ViT model = small_model("translution", at::kFloat);
  std::vector<at::Tensor> before;
  for (const auto& p : model->parameters()) before.push_back(p.detach().clone());
  const at::Tensor images = at::randn({3, 1, 9, 12});
  const at::Tensor logits = model->forward(EngineOptions{}, images);
  ViT knocked = knocked_out_copy(
      model, knockout_of(offsets_beyond(model->config().token_layout(), 1.0), true, true, true, kMean, true));
  const auto after = model->parameters();
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(at::equal(after[i], before[i])) << "parameter " << i;
  EXPECT_TRUE(at::equal(model->forward(EngineOptions{}, images), logits));
  EXPECT_FALSE(at::allclose(knocked->forward(EngineOptions{}, images), logits))
      << "the copy's knockout changed nothing";
  // The copy shares no storage: changing it leaves the original as it was.
  {
    at::NoGradGuard no_grad;
    for (const auto& p : knocked->parameters()) p.add_(1);
  }
  EXPECT_TRUE(at::equal(model->forward(EngineOptions{}, images), logits));
}

TEST(OffsetKnockout, KnockingOutNothingChangesNothing) {
  ViT model = small_model("translution", at::kFloat);
  const at::Tensor images = at::randn({3, 1, 9, 12});
  int64_t matrices = -1;
  ViT copy = knocked_out_copy(model, OffsetKnockout{}, &matrices);
  EXPECT_EQ(matrices, 0);
  EXPECT_TRUE(at::equal(copy->forward(EngineOptions{}, images), model->forward(EngineOptions{}, images)));
  AppliedKnockout none(model, OffsetKnockout{});
  EXPECT_EQ(none.matrices(), 0);
}

// Applied in place and restored: the same forward as a knocked-out copy while it
// stands, and every weight bit for bit as before once restored.
TEST(OffsetKnockout, AppliedKnockoutRestoresEveryWeight) {
  ViT model = small_model("lor", at::kFloat);
  const at::Tensor images = at::randn({3, 1, 9, 12});
  const at::Tensor logits = model->forward(EngineOptions{}, images);
  const OffsetKnockout k = knockout_of({{0, 0}, {1, -2}}, true, true, true, kMean);
  ViT copy = knocked_out_copy(model, k);
  {
    AppliedKnockout applied(model, k);
    EXPECT_EQ(applied.matrices(), 2 * 3 * 2);  // offsets x projections x layers
    EXPECT_TRUE(
        at::allclose(model->forward(EngineOptions{}, images), copy->forward(EngineOptions{}, images), 0, 0));
  }
  EXPECT_TRUE(at::equal(model->forward(EngineOptions{}, images), logits));
  EXPECT_EQ(apply_knockout(model, k), 12);  // for good
  EXPECT_TRUE(at::equal(model->forward(EngineOptions{}, images), copy->forward(EngineOptions{}, images)));
}

TEST(OffsetKnockout, HelpersSelectOffsetsByDistanceAndRectangle) {
  const TokenLayout layout = small_config("translution").token_layout();  // dy in [-2, 2], dx in [-3, 3]
  EXPECT_EQ(layout_offsets(layout).size(), 35u);
  EXPECT_EQ(offsets_beyond(layout, 0).size(), 34u);  // all but (0, 0)
  // Within Euclidean distance 1.5: (0, 0), the four neighbours and the four diagonals (sqrt 2).
  EXPECT_EQ(offsets_beyond(layout, 1.5).size(), 35u - 9u);
  EXPECT_EQ(offsets_beyond(layout, 2.0).size(), 35u - 13u);  // and (0, +-2), (+-2, 0)
  const auto rect = offsets_in_rectangle(layout, {1, 2}, {-1, 0});
  EXPECT_EQ(rect.size(), 9u);
  EXPECT_EQ(rect.front(), (Offset{-1, 0}));
  EXPECT_EQ(rect.back(), (Offset{1, 2}));
  EXPECT_THROW(offsets_in_rectangle(layout, {0, 0}, {3, 0}), Error);
}

TEST(OffsetKnockout, RefusesWhatItCannotKnockOut) {
  ViT model = small_model("translution", at::kFloat);
  const auto message = [](const ViT& m, const OffsetKnockout& k) {
    try {
      knocked_out_copy(m, k);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(model, knockout_of({{3, 0}}, true, true, true, kZero)).find("offset (3, 0) is not on"),
            std::string::npos);
  EXPECT_NE(message(model, knockout_of({{0, 0}}, true, true, true, kZero, false, {2})).find("layer 2 is not"),
            std::string::npos);
  EXPECT_NE(message(small_model("translution-v", at::kFloat), knockout_of({{0, 1}}, true, true, false, kZero))
                .find("replaces no matrix"),
            std::string::npos);
  EXPECT_NE(message(small_model("attention", at::kFloat), knockout_of({{0, 1}}, true, true, true, kZero))
                .find("replaces no matrix"),
            std::string::npos);
  EXPECT_NE(
      message(small_model("translution-abs", at::kFloat), knockout_of({{0, 1}}, true, true, true, kZero))
          .find("one matrix per token pair"),
      std::string::npos);
  EXPECT_THROW(parse_replacement("half"), Error);
}

// Offset importance knocks each offset out alone, as a knocked-out copy would be,
// and leaves the model as it found it, also when stopped part way.
TEST(OffsetImportance, EachOffsetAloneAsACopyWouldScoreIt) {
  ViT model = small_model("translution", at::kFloat);
  std::vector<at::Tensor> before;
  for (const auto& p : model->parameters()) before.push_back(p.detach().clone());
  const at::Tensor images = at::randn({6, 1, 9, 12});
  const at::Tensor labels = at::tensor({0, 1, 2, 3, 4, 5}, at::kLong);
  const OffsetImportance r = offset_importance(EngineOptions{}, model, images, labels, kMean, 4);
  ASSERT_TRUE(r.complete);
  ASSERT_EQ(r.offsets.size(), 35u);
  ASSERT_EQ(r.logit_drop.size(), 35u);
  at::NoGradGuard no_grad;
  const auto true_logit = [&](ViT& m) {
    return m->forward(EngineOptions{}, images).gather(1, labels.unsqueeze(1)).mean().item<double>();
  };
  EXPECT_NEAR(r.baseline_logit, true_logit(model), 1e-5);
  for (const size_t i : {size_t(0), size_t(17), size_t(34)}) {
    ViT copy = knocked_out_copy(model, knockout_of({r.offsets[i]}, true, true, true, kMean));
    EXPECT_NEAR(r.logit_drop[i], r.baseline_logit - true_logit(copy), 1e-5) << "offset " << i;
    EXPECT_NEAR(r.accuracy_drop[i], r.baseline_accuracy - r.accuracy[i], 1e-12);
  }
  const at::Tensor grid = r.grid(r.logit_drop);
  EXPECT_EQ(grid.sizes(), (std::vector<int64_t>{5, 7}));
  EXPECT_FLOAT_EQ(grid[0][0].item<float>(), float(r.logit_drop[0]));  // offset (-2, -3)
  const OffsetImportance stopped = offset_importance(EngineOptions{}, model, images, labels, kZero, 4, false,
                                                     [](int64_t done, int64_t) { return done < 3; });
  EXPECT_FALSE(stopped.complete);
  EXPECT_EQ(stopped.accuracy.size(), 3u);
  EXPECT_TRUE(std::isnan(stopped.grid(stopped.accuracy)[4][6].item<float>()));  // not measured
  const auto after = model->parameters();
  for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(at::equal(after[i], before[i])) << "parameter " << i;
}
