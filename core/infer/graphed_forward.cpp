#include "infer/graphed_forward.h"

#include <torch/version.h>

#include "util/error.h"

#if defined(TRANSLUTION_WITH_CUDA) && TORCH_VERSION_MAJOR >= 2
#define TRANSLUTION_CUDA_GRAPHS 1
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace translution {

#ifdef TRANSLUTION_CUDA_GRAPHS

bool cuda_graphs_supported() { return true; }

struct GraphedForward::Capture {
  at::cuda::CUDAGraph graph;
};

namespace {

// The first line of an exception's message (LibTorch appends its trace after it).
std::string first_line(const std::string& message) { return message.substr(0, message.find('\n')); }

// After a failed capture: end the stream's capture if it is still open and clear
// the error it left, so the eager forward that follows starts clean.
void abandon_capture(const c10::cuda::CUDAStream& stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream.stream(), &status) == cudaSuccess &&
      status != cudaStreamCaptureStatusNone) {
    cudaGraph_t graph = nullptr;
    cudaStreamEndCapture(stream.stream(), &graph);
    if (graph) cudaGraphDestroy(graph);
  }
  cudaGetLastError();
}

}  // namespace

GraphedForward::GraphedForward(const EngineOptions& engine, ViT model, const at::Tensor& example,
                               bool with_attention)
    : model_(std::move(model)) {
  if (!example.is_cuda() || example.dim() != 4 || example.size(0) != 1)
    throw Error("internal: a graphed forward takes one image [1, channels, H, W] on a CUDA device");
  at::NoGradGuard no_grad;
  const c10::cuda::CUDAGuard device(example.device());
  input_ = example.clone();
  capture_ = std::make_unique<Capture>();
  // Capture runs on a stream of its own (the default stream cannot be captured),
  // after everything queued so far. Its mode is thread-local, so other threads'
  // CUDA work (other studio slots, a training run) neither breaks nor is broken
  // by the capture.
  c10::cuda::getCurrentCUDAStream().synchronize();
  const c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, example.device().index());
  ViTInspection inspection;
  ViTInspection* inspect = with_attention ? &inspection : nullptr;
  try {
    const c10::cuda::CUDAStreamGuard on_stream(stream);
    // Warm-up on the capture's stream: the operators' device constants, cuBLAS's
    // workspace for this stream and the allocator's blocks exist before capture.
    for (int i = 0; i < 2; ++i) model_->forward(engine, input_, inspect);
    stream.synchronize();
    capture_->graph.capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
    outputs_.logits = model_->forward(engine, input_, inspect);
    capture_->graph.capture_end();
  } catch (const std::exception& e) {
    abandon_capture(stream);
    capture_.reset();
    throw Error("CUDA graph capture failed: " + first_line(e.what()));
  }
  stream.synchronize();
  outputs_.attention = inspection.attention;
  outputs_.inputs = inspection.inputs;
}

const GraphedOutputs& GraphedForward::run(const at::Tensor& images) {
  const c10::cuda::CUDAGuard device(input_.device());
  input_.copy_(images);      // on the current stream,
  capture_->graph.replay();  // which the replay follows
  return outputs_;
}

#else

bool cuda_graphs_supported() { return false; }

struct GraphedForward::Capture {};

GraphedForward::GraphedForward(const EngineOptions&, ViT model, const at::Tensor&, bool)
    : model_(std::move(model)) {
  throw Error("CUDA graphs need a CUDA build of LibTorch 2 or later");
}

const GraphedOutputs& GraphedForward::run(const at::Tensor&) {
  throw Error("CUDA graphs need a CUDA build of LibTorch 2 or later");
}

#endif

GraphedForward::~GraphedForward() = default;

}  // namespace translution
