#include "infer/offset_importance.h"

#include <limits>
#include <optional>

#include <ATen/ATen.h>

#include "cpu/bf16_weights.h"
#include "nn/attention.h"
#include "nn/eval_mode.h"
#include "util/error.h"

namespace translution {
namespace {

struct Score {
  double accuracy = 0, logit = 0;  // fraction correct; mean true-class logit
};

// The model's accuracy and mean true-class logit as its weights are now.
Score score(const EngineOptions& engine, ViT& model, const at::Tensor& images, const at::Tensor& labels,
            int64_t batch, bool bf16_weights) {
  std::optional<Bf16Weights> copies;
  if (bf16_weights) copies.emplace(relative_banks(*model));
  EngineOptions options = engine;
  options.bf16_weights = copies ? &*copies : nullptr;  // copies of the weights as they are now
  int64_t correct = 0;
  double logit_sum = 0;
  const int64_t D = images.size(0);
  for (int64_t begin = 0; begin < D; begin += batch) {
    const int64_t n = std::min(batch, D - begin);
    const at::Tensor logits = model->forward(options, images.narrow(0, begin, n));
    const at::Tensor truth = labels.narrow(0, begin, n);
    correct += logits.argmax(1).eq(truth).sum().item<int64_t>();
    logit_sum += logits.gather(1, truth.unsqueeze(1)).sum().item<double>();
  }
  return {double(correct) / double(D), logit_sum / double(D)};
}

}  // namespace

at::Tensor OffsetImportance::grid(const std::vector<double>& values) const {
  if (values.size() > offsets.size())
    throw Error("offset importance: " + std::to_string(values.size()) + " values for " +
                std::to_string(offsets.size()) + " offsets");
  at::Tensor out =
      at::full({2 * layout.height - 1, 2 * layout.width - 1}, std::numeric_limits<float>::quiet_NaN());
  auto cells = out.accessor<float, 2>();
  for (size_t i = 0; i < values.size(); ++i)
    cells[offsets[i].dy + layout.height - 1][offsets[i].dx + layout.width - 1] = float(values[i]);
  return out;
}

OffsetImportance offset_importance(const EngineOptions& engine, ViT model, const at::Tensor& images,
                                   const at::Tensor& labels, OffsetKnockout::Replacement replacement,
                                   int64_t batch, bool bf16_weights, const ImportanceProgress& progress) {
  if (images.size(0) == 0 || images.size(0) != labels.size(0))
    throw Error("offset importance needs digits and as many labels; got " + std::to_string(images.size(0)) +
                " images and " + std::to_string(labels.size(0)) + " labels");
  if (batch < 1) throw Error("offset importance: batch " + std::to_string(batch) + " must be at least 1");
  at::NoGradGuard no_grad;
  const EvalMode evaluating(*model);
  OffsetImportance r;
  r.layout = model->config().token_layout();
  r.digits = images.size(0);
  r.offsets = layout_offsets(r.layout);
  const Score base = score(engine, model, images, labels, batch, bf16_weights);
  r.baseline_accuracy = base.accuracy;
  r.baseline_logit = base.logit;
  const int64_t total = int64_t(r.offsets.size());
  bool go_on = !progress || progress(0, total);
  for (int64_t i = 0; i < total && go_on; ++i) {
    OffsetKnockout k;
    k.offsets = {r.offsets[size_t(i)]};
    k.replacement = replacement;
    Score s;
    {
      const AppliedKnockout applied(model,
                                    k);  // restored at the end of this scope, also when a forward throws
      s = score(engine, model, images, labels, batch, bf16_weights);
    }
    r.accuracy.push_back(s.accuracy);
    r.accuracy_drop.push_back(base.accuracy - s.accuracy);
    r.logit_drop.push_back(base.logit - s.logit);
    go_on = !progress || progress(i + 1, total);
  }
  r.complete = int64_t(r.accuracy.size()) == total;
  return r;
}

}  // namespace translution
