// Every attention operator against the per-pair reference written from the
// papers' equations, in double precision: outputs and the gradients of the input
// and of every parameter must agree to 1e-9 relative.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

#include "cpu/blas_gemm.h"
#include "cpu/helper_threads.h"
#include "cpu/kernel_observer.h"
#include "cpu/pair_kernels.h"
#include "naive_attention.h"
#include "nn/attention.h"
#include "nn/relative_projection.h"
#include "nn/self_attention.h"
#include "tensor_checks.h"
#include "test_switches.h"
#include "util/device.h"

using namespace translution;

namespace {

struct Case {
  std::string name;
  std::string model;  // attention_choice name
  TokenLayout layout;
  AttentionShape shape;
  bool lor_shared = true;
  int64_t c1 = 2, c2 = 3;
  bool value_slices = false;
};

// Keeps ctest's test names and gtest's messages readable.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::string layout_tag(const TokenLayout& l) {
  if (l.kind == TokenLayout::Kind::Sequence1D)
    return std::string(l.causal ? "causal" : "seq") + std::to_string(l.width) + (l.cls ? "cls" : "");
  return std::to_string(l.height) + "x" + std::to_string(l.width) + (l.cls ? "cls" : "");
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  const std::vector<TokenLayout> layouts = {
      TokenLayout::grid(2, 3, true),         TokenLayout::grid(3, 2, false),
      TokenLayout::grid(1, 4, true),         TokenLayout::sequence(5, true),
      TokenLayout::sequence(4, false, true), TokenLayout::sequence(4, true, true)};
  // two heads; one head spanning the width (head dims divisible by 4 for 2-D RoPE)
  const std::vector<AttentionShape> shapes = {{5, 2, 4}, {4, 1, 4}};
  int n = 0;
  for (const auto& choice : attention_choices()) {
    if (choice.spec.encoding == PairEncoding::Absolute) continue;
    for (const auto& layout : layouts) {
      const AttentionShape shape = shapes[size_t(n++ % 2)];
      cases.push_back({choice.name + "_" + layout_tag(layout) + "_h" + std::to_string(shape.heads),
                       choice.name, layout, shape});
    }
  }
  // LoR without the shared terms (Appendix G), for every combination that defines values and logits.
  for (const std::string model : {"lor", "lor-qv", "lor-kv", "lor-v"}) {
    if (model == "lor-v")
      continue;  // without shared terms attention would be uniform: rejected by validate()
    cases.push_back({model + "_noshared_2x3cls", model, TokenLayout::grid(2, 3, true), {5, 2, 3}, false});
    cases.push_back({model + "_noshared_causal5", model, TokenLayout::sequence(5, true), {5, 2, 3}, false});
  }
  // Absolute pair encodings (Table 5) on a small grid.
  for (const std::string model : {"translution-abs", "lor-abs"}) {
    cases.push_back({model + "_2x2cls", model, TokenLayout::grid(2, 2, true), {5, 2, 3}});
    cases.push_back({model + "_causal4", model, TokenLayout::sequence(4, true), {4, 1, 4}});
  }
  // LoR's values sliced per head (the public code's arrangement), with and without shared terms.
  for (const std::string model : {"lor", "lor-v", "lor-kv", "lor-rope-translution"}) {
    cases.push_back(
        {model + "_slices_2x3cls_h3", model, TokenLayout::grid(2, 3, true), {6, 3, 4}, true, 2, 3, true});
    cases.push_back(
        {model + "_slices_causal5", model, TokenLayout::sequence(5, true), {5, 2, 4}, true, 3, 2, true});
  }
  cases.push_back(
      {"lor_slices_noshared_3x2", "lor", TokenLayout::grid(3, 2, false), {5, 2, 4}, false, 2, 3, true});
  // Larger non-square grid with several heads and distinct LoR dims.
  cases.push_back({"translution_3x4cls_h3", "translution", TokenLayout::grid(3, 4, true), {6, 3, 2}});
  cases.push_back({"lor_3x4cls_h3", "lor", TokenLayout::grid(3, 4, true), {6, 3, 2}, true, 3, 2});
  return cases;
}

using test_support::max_relative_error;

// The defaults with the projection forced one way.
EngineOptions projected(ProjectionAlgorithm algorithm) {
  return with(EngineOptions{}, &EngineOptions::projection, algorithm);
}

// The fast path's gradients of the input and of every parameter (in `names`' order)
// against the reference's, to 1e-9; the fast ones may be on the GPU.
void expect_same_gradients(const std::vector<at::Tensor>& fast, const std::vector<at::Tensor>& naive,
                           const torch::OrderedDict<std::string, at::Tensor>& names) {
  for (size_t n = 0; n < naive.size(); ++n) {
    const std::string what = n == 0 ? "input" : names[n - 1].key();
    ASSERT_TRUE(naive[n].defined()) << what << " does not influence the reference";
    ASSERT_TRUE(fast[n].defined()) << what << " has no gradient in the fast path";
    EXPECT_LT(max_relative_error(fast[n].cpu(), naive[n]), 1e-9) << "gradient of " << what;
  }
}

// Attention rows are distributions; causal ones put no mass on the pairs the mask
// hides (the future; CLS, for positions).
void expect_distributions(const at::Tensor& probs, const TokenLayout& layout) {
  EXPECT_LT((probs.sum(-1) - 1).abs().max().item<double>(), 1e-12);
  if (!layout.causal) return;
  EXPECT_EQ(
      probs.cpu().masked_select(make_relative_table(layout).valid.logical_not()).abs().sum().item<double>(),
      0.0);
}

class AttentionExactness : public ::testing::TestWithParam<Case> {
 protected:
  // Each runs the operator under `engine` (the reference it is checked against
  // is the naive per-pair computation, whatever the options).
  void check(const EngineOptions& engine, const Case& c, bool retain_graph = false,
             bool create_graph = false);
  void check_queries(const EngineOptions& engine, const Case& c, int64_t queries);
  void check_on_cuda(const EngineOptions& engine, const Case& c, int64_t queries);
};

// Both ways of computing relative projections must be exact. Each test runs its
// variants in one process: a test process's start costs more than a check.
// The engine's kernels: pair arithmetic inside each matrix's block where it applies.
TEST_P(AttentionExactness, ForwardAndGradientsMatchNaiveReferencePerMatrix) {
  for (const int threads : {1, 3}) {  // all matrices on this thread; three uneven parts, own input gradients
    SCOPED_TRACE("matrices split over " + std::to_string(threads) + " thread(s)");
    check(test_support::threads_options(threads, projected(ProjectionAlgorithm::PerMatrix)), GetParam());
  }
}

// The plain reference path: per-matrix products through at::mm, and the per-pair
// dot products and weighted sums as ATen expressions.
TEST_P(AttentionExactness, ForwardAndGradientsMatchNaiveReferencePerMatrixThroughATen) {
  check(test_support::reference_options(projected(ProjectionAlgorithm::PerMatrix)), GetParam());
}

TEST_P(AttentionExactness, ForwardAndGradientsMatchNaiveReferenceAllTokens) {
  check(projected(ProjectionAlgorithm::AllTokens), GetParam());
}

// Relative products offset-batched (cpu/offset_buckets.h), with the engine's kernels
// elsewhere, then with LibTorch's ops everywhere: the path a GPU takes, here on the CPU.
TEST_P(AttentionExactness, ForwardAndGradientsMatchNaiveReferenceOffsetBatched) {
  const KernelCounts kernels;
  const EngineOptions offset_batched = projected(ProjectionAlgorithm::OffsetBatched);
  check(offset_batched, GetParam());
  {
    SCOPED_TRACE("LibTorch's ops everywhere");
    check(test_support::reference_options(offset_batched), GetParam());
  }
  // Translution's and LoR's offset matrices take it; the other operators have none.
  const std::string& model = GetParam().model;
  const bool banks = model.find("translution") != std::string::npos || model.rfind("lor", 0) == 0;
  EXPECT_EQ(kernels[Kernel::OffsetBatched] > 0, banks)
      << "offset-batched products ran: " << kernels[Kernel::OffsetBatched];
}

// The outputs of the first M tokens alone (ViT's last block asks for the CLS
// token's, nn/vit.h), every token still a key and a value: the reference's first
// M rows, forward and gradients, one query and about half of them, through the
// raw per-matrix path, the ATen fallbacks, with the reassociation off and through
// the all-token projection.
TEST_P(AttentionExactness, FirstQueriesMatchNaiveReference) {
  const int64_t N = GetParam().layout.tokens();
  for (const int64_t queries : {int64_t(1), (N + 1) / 2}) {
    SCOPED_TRACE(std::to_string(queries) + " of " + std::to_string(N) + " queries");
    const EngineOptions per_matrix = projected(ProjectionAlgorithm::PerMatrix);
    check_queries(per_matrix, GetParam(), queries);
    {
      SCOPED_TRACE("products through at::mm, pair arithmetic as ATen expressions");
      check_queries(test_support::reference_options(per_matrix), GetParam(), queries);
    }
    {
      // Batches of two take the reassociated path for self-attention and LoR where
      // it is less work (nn/self_attention.h); one image, and this option, the
      // plain one.
      SCOPED_TRACE("keys and values projected (reassociation off)");
      check_queries(with(per_matrix, &EngineOptions::query_reassociation, false), GetParam(), queries);
    }
    {
      SCOPED_TRACE("all-token projection");
      check_queries(projected(ProjectionAlgorithm::AllTokens), GetParam(), queries);
    }
    SCOPED_TRACE("offset-batched products");
    check_queries(projected(ProjectionAlgorithm::OffsetBatched), GetParam(), queries);
  }
}

// The same operators on the GPU (double precision there too) against the reference
// computed on the CPU: every token, then the first token alone, with each way of
// computing relative projections. Skipped where LibTorch has no CUDA or no GPU is visible.
TEST_P(AttentionExactness, OnCudaMatchesNaiveReference) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: this LibTorch is CPU-only or no GPU is visible";
  for (const auto algorithm :
       {ProjectionAlgorithm::PerMatrix, ProjectionAlgorithm::AllTokens, ProjectionAlgorithm::OffsetBatched}) {
    SCOPED_TRACE(std::string(projection_algorithm_name(algorithm)) + " projections");
    check_on_cuda(projected(algorithm), GetParam(), GetParam().layout.tokens());
    check_on_cuda(projected(algorithm), GetParam(), 1);
  }
}

// Pair rows, saved or recomputed, take their gradients in place where nothing
// can read them again. Recomputing them in backward must give the same gradients.
// Saved ones must survive a backward that keeps the graph (retain_graph, and
// create_graph, whose recorded ops may hold them): a second backward through the
// same graph is exact too. Fused kernels and ATen expressions, in one process
// per operator (a test process's start costs more than these checks).
class SavedRowsExactness : public AttentionExactness {};
TEST_P(SavedRowsExactness, RecomputedOrReusedRowsMatchNaiveReference) {
  for (const bool reference : {false, true}) {
    const EngineOptions engine = with(EngineOptions{}, &EngineOptions::reference, reference);
    const std::string kernels = reference ? "ATen expressions" : "the engine's kernels";
    {
      SCOPED_TRACE(kernels + ", rows recomputed in backward");
      check(with(engine, &EngineOptions::recompute_pair_rows, true), GetParam());
    }
    for (const bool create_graph : {false, true}) {
      SCOPED_TRACE(kernels +
                   (create_graph ? ", first backward with create_graph" : ", first with retain_graph"));
      check(engine, GetParam(), true, create_graph);
    }
  }
}

// The case's operator spec, and the operator in double precision with seeded weights
// (the random stream then goes on to the test's input).
AttentionSpec case_spec(const Case& c) {
  AttentionSpec spec = attention_choice(c.model).spec;
  spec.lor_shared = c.lor_shared;
  spec.lor_value_slices = c.value_slices;
  spec.lor_c1 = c.c1;
  spec.lor_c2 = c.c2;
  return spec;
}

std::shared_ptr<AttentionModule> case_module(const Case& c) {
  at::manual_seed(1234);
  auto module = make_attention(case_spec(c), c.shape, c.layout);
  module->to(at::kDouble);
  return module;
}

void AttentionExactness::check(const EngineOptions& engine, const Case& c, bool retain_graph,
                               bool create_graph) {
  const AttentionSpec spec = case_spec(c);
  auto module = case_module(c);
  const int64_t B = 2, N = c.layout.tokens();
  const at::Tensor x = at::randn({B, N, c.shape.dim}, at::kDouble).requires_grad_(true);
  const at::Tensor probe = at::randn({B, N, c.shape.dim}, at::kDouble);

  at::Tensor probs;
  const at::Tensor fast = module->forward(engine, x, &probs);
  const at::Tensor naive = test_support::naive_attention(*module, spec, c.shape, c.layout, x);
  ASSERT_EQ(fast.sizes(), naive.sizes());
  EXPECT_LT(max_relative_error(fast, naive), 1e-9) << "forward";

  expect_distributions(probs, c.layout);

  std::vector<at::Tensor> inputs{x};
  for (const auto& p : module->parameters()) inputs.push_back(p);
  const at::Tensor loss = (fast * probe).sum();
  const auto grad_naive = torch::autograd::grad({(naive * probe).sum()}, inputs, {}, false, false, true);
  const auto names = module->named_parameters();
  for (int pass = 0; pass < (retain_graph ? 2 : 1); ++pass) {
    SCOPED_TRACE("backward pass " + std::to_string(pass + 1));
    const bool last = pass == (retain_graph ? 1 : 0);
    const auto grad_fast = torch::autograd::grad({loss}, inputs, {}, !last, create_graph && !last, true);
    expect_same_gradients(grad_fast, grad_naive, names);
  }
}

void AttentionExactness::check_queries(const EngineOptions& engine, const Case& c, int64_t queries) {
  const AttentionSpec spec = case_spec(c);
  auto module = case_module(c);
  const int64_t B = 2, N = c.layout.tokens();
  const at::Tensor x = at::randn({B, N, c.shape.dim}, at::kDouble).requires_grad_(true);
  const at::Tensor probe = at::randn({B, queries, c.shape.dim}, at::kDouble);

  const at::Tensor fast = module->forward_queries(engine, x, queries);
  const at::Tensor naive =
      test_support::naive_attention(*module, spec, c.shape, c.layout, x).narrow(1, 0, queries);
  ASSERT_EQ(fast.sizes(), naive.sizes());
  EXPECT_LT(max_relative_error(fast, naive), 1e-9) << "forward";
  {
    at::NoGradGuard no_grad;  // prediction's path: the engine's inference passes
    EXPECT_LT(max_relative_error(module->forward_queries(engine, x, queries), naive.detach()), 1e-9)
        << "forward without gradients";
  }

  std::vector<at::Tensor> inputs{x};
  for (const auto& p : module->parameters()) inputs.push_back(p);
  const auto grad_naive = torch::autograd::grad({(naive * probe).sum()}, inputs, {}, false, false, true);
  const auto grad_fast = torch::autograd::grad({(fast * probe).sum()}, inputs, {}, false, false, true);
  const auto names = module->named_parameters();
  expect_same_gradients(grad_fast, grad_naive, names);
}

void AttentionExactness::check_on_cuda(const EngineOptions& engine, const Case& c, int64_t queries) {
  SCOPED_TRACE(std::to_string(queries) + " queries");
  const AttentionSpec spec = case_spec(c);
  auto reference = case_module(c);
  auto module = case_module(c);  // the same seeded weights
  const c10::Device gpu(c10::kCUDA, 0);
  module->to(gpu);
  const int64_t B = 2, N = c.layout.tokens();
  const at::Tensor x = at::randn({B, N, c.shape.dim}, at::kDouble).requires_grad_(true);
  const at::Tensor probe = at::randn({B, queries, c.shape.dim}, at::kDouble);
  const at::Tensor x_gpu = x.detach().to(gpu).requires_grad_(true);

  const at::Tensor naive =
      test_support::naive_attention(*reference, spec, c.shape, c.layout, x).narrow(1, 0, queries);
  at::Tensor probs;
  const at::Tensor fast =
      queries == N ? module->forward(engine, x_gpu, &probs) : module->forward_queries(engine, x_gpu, queries);
  ASSERT_TRUE(fast.is_cuda());
  ASSERT_EQ(fast.sizes(), naive.sizes());
  EXPECT_LT(max_relative_error(fast.cpu(), naive), 1e-9) << "forward";
  if (probs.defined()) expect_distributions(probs, c.layout);
  {
    at::NoGradGuard no_grad;
    EXPECT_LT(max_relative_error(module->forward_queries(engine, x_gpu, queries).cpu(), naive.detach()), 1e-9)
        << "forward without gradients";
  }

  std::vector<at::Tensor> inputs{x}, inputs_gpu{x_gpu};
  for (const auto& p : reference->parameters()) inputs.push_back(p);
  for (const auto& p : module->parameters()) inputs_gpu.push_back(p);
  const auto grad_naive = torch::autograd::grad({(naive * probe).sum()}, inputs, {}, false, false, true);
  const auto grad_fast =
      torch::autograd::grad({(fast * probe.to(gpu)).sum()}, inputs_gpu, {}, false, false, true);
  const auto names = module->named_parameters();
  expect_same_gradients(grad_fast, grad_naive, names);
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string s = info.param.name;
  for (char& ch : s)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

std::vector<Case> relative_cases() {
  std::vector<Case> out;
  for (const Case& c : all_cases())
    if (attention_choice(c.model).spec.relative()) out.push_back(c);
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllOperators, AttentionExactness, ::testing::ValuesIn(all_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(RelativeOperators, SavedRowsExactness, ::testing::ValuesIn(relative_cases()),
                         case_name);

}  // namespace
