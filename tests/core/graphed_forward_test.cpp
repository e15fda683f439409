// One image's prediction replayed as a CUDA graph (infer/graphed_forward.h) must be
// the eager prediction: every operator's model captures (no host copy or wait in
// its forward), and each replay reads the canvas it is given. Skipped, saying so,
// where LibTorch has no CUDA or no GPU is visible; the CPU's side (no graph, and a
// clear refusal where the build cannot capture) runs everywhere.
#include "infer/graphed_forward.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "infer/predictor.h"
#include "nn/attention_spec.h"
#include "tensor_checks.h"
#include "util/device.h"
#include "util/error.h"

using namespace translution;
using test_support::max_relative_error;

namespace {

Checkpoint fresh_checkpoint(const std::string& model) {
  Checkpoint c;
  c.config = preset_config("tiny", model);
  c.config.image_height = c.config.image_width = 28;
  c.config.patch = 7;
  c.config.depth = 2;
  at::manual_seed(11);
  c.model = ViT(c.config);
  return c;
}

// Canvases in [0, 1] that differ from one another.
std::vector<at::Tensor> canvases() {
  at::manual_seed(12);
  return {at::rand({28, 28}), at::rand({28, 28}).pow(3), at::zeros({28, 28})};
}

void expect_same_prediction(const Prediction& graphed, const Prediction& eager, double tolerance) {
  ASSERT_EQ(graphed.probabilities.size(), eager.probabilities.size());
  const at::Tensor a = at::tensor(graphed.probabilities), b = at::tensor(eager.probabilities);
  EXPECT_LT(max_relative_error(a, b), tolerance) << "probabilities";
  EXPECT_EQ(graphed.predicted, eager.predicted);
  ASSERT_EQ(graphed.attention.size(), eager.attention.size());
  ASSERT_EQ(graphed.attention_inputs.size(), eager.attention_inputs.size());
  for (size_t l = 0; l < eager.attention.size(); ++l) {
    EXPECT_LT(max_relative_error(graphed.attention[l], eager.attention[l]), tolerance)
        << "attention of layer " << l;
    EXPECT_LT(max_relative_error(graphed.attention_inputs[l].cpu(), eager.attention_inputs[l].cpu()),
              tolerance)
        << "attention input of layer " << l;
  }
}

}  // namespace

TEST(GraphedForward, CpuPredictionsRunEagerly) {
  const Predictor cpu(EngineOptions{}, fresh_checkpoint("translution"), "fresh", c10::kCPU);
  EXPECT_EQ(cpu.graph_state(), "eager");
  EXPECT_EQ(cpu.predict(canvases()[0], true).attention.size(), 2u);
  if (cuda_graphs_supported()) return;
  // A build that cannot capture says so, whatever it is given.
  try {
    GraphedForward graph(EngineOptions{}, fresh_checkpoint("lor").model, at::zeros({1, 1, 28, 28}), false);
    FAIL() << "a CPU-only build captured a CUDA graph";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA graphs need"), std::string::npos) << e.what();
  }
}

TEST(Cuda, GraphedPredictionsMatchEagerForEveryOperator) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: this LibTorch is CPU-only or no GPU is visible";
  if (!cuda_graphs_supported()) GTEST_SKIP() << "this LibTorch cannot capture CUDA graphs (version 1)";
  const c10::Device gpu(c10::kCUDA, 0);
  for (const AttentionChoice& choice : attention_choices()) {
    SCOPED_TRACE(choice.name);
    const Checkpoint checkpoint = fresh_checkpoint(choice.name);  // both predictors share its weights
    const Predictor graphed(EngineOptions{}, checkpoint, "fresh", gpu, true),
        eager(EngineOptions{}, checkpoint, "fresh", gpu, false);
    EXPECT_EQ(graphed.graph_state(), "CUDA graph (not captured yet)");
    EXPECT_EQ(eager.graph_state(), "eager");
    std::vector<double> previous;
    for (const at::Tensor& canvas : canvases()) {
      for (const bool with_attention : {true, false}) {
        const Prediction g = graphed.predict(canvas, with_attention),
                         e = eager.predict(canvas, with_attention);
        expect_same_prediction(g, e, 1e-5);
        if (with_attention) {
          const auto cg = graphed.value_contributions(g), ce = eager.value_contributions(e);
          ASSERT_EQ(cg.size(), ce.size());
          for (size_t l = 0; l < ce.size(); ++l)
            for (size_t p = 0; p < ce[l].size(); ++p)
              EXPECT_LT(max_relative_error(cg[l][p].norms, ce[l][p].norms), 1e-5)
                  << "value contributions " << l;
        }
      }
      // Each replay read its own canvas: the next one's answer differs.
      const std::vector<double> now = graphed.predict(canvas, false).probabilities;
      EXPECT_NE(now, previous);
      previous = now;
    }
    EXPECT_EQ(graphed.graph_state(), "CUDA graph");
  }
}
