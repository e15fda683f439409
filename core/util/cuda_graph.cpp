#include "util/cuda_graph.h"

#include <string>
#include <tuple>
#include <utility>
#include <vector>

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

struct CudaGraph::Capture {
  explicit Capture(const c10::Device& on) : device(on) {}
  at::cuda::CUDAGraph graph;
  c10::Device device;
};

namespace {

// The first line of an exception's message (LibTorch appends its trace after it).
std::string first_line(const std::string& message) { return message.substr(0, message.find('\n')); }

// After a failed capture: end the stream's capture if it is still open and clear
// the error it left, so the eager work that follows starts clean.
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

// The kernel nodes and the other nodes of the graph `stream` is capturing, read
// before the capture ends (LibTorch's graph keeps only the executable form after).
// {-1, -1} where CUDA does not answer.
std::pair<int64_t, int64_t> captured_nodes(const c10::cuda::CUDAStream& stream) {
#if CUDART_VERSION < 12000  // the capture's graph is asked for through cudaStreamGetCaptureInfo_v2 there
  (void)stream;
  return {-1, -1};
#else
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  size_t count = 0;
  if (cudaStreamGetCaptureInfo(stream.stream(), &status, nullptr, &graph) != cudaSuccess || !graph ||
      cudaGraphGetNodes(graph, nullptr, &count) != cudaSuccess) {
    cudaGetLastError();
    return {-1, -1};
  }
  std::vector<cudaGraphNode_t> nodes(count);
  if (count > 0 && cudaGraphGetNodes(graph, nodes.data(), &count) != cudaSuccess) {
    cudaGetLastError();
    return {-1, -1};
  }
  int64_t kernels = 0;
  for (const cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
    if (cudaGraphNodeGetType(node, &type) == cudaSuccess && type == cudaGraphNodeTypeKernel) ++kernels;
  }
  return {kernels, int64_t(count) - kernels};
#endif
}

}  // namespace

CudaGraph::CudaGraph(const c10::Device& device, int warmups, const std::function<void()>& work) {
  if (!device.is_cuda()) throw Error("internal: a CUDA graph captures work on a CUDA device");
  const c10::cuda::CUDAGuard on_device(device);
  // Capture runs on a stream of its own (the default stream cannot be captured),
  // after everything queued so far.
  c10::cuda::getCurrentCUDAStream().synchronize();
  const c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, device.index());
  auto capture = std::make_unique<Capture>(device);
  try {
    const c10::cuda::CUDAStreamGuard on_stream(stream);
    for (int i = 0; i < warmups; ++i) work();
    stream.synchronize();
    capture->graph.capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
    work();
    std::tie(kernels_, other_nodes_) = captured_nodes(stream);
    capture->graph.capture_end();
  } catch (const std::exception& e) {
    abandon_capture(stream);
    throw Error("CUDA graph capture failed: " + first_line(e.what()));
  }
  stream.synchronize();
  capture_ = std::move(capture);
}

void CudaGraph::replay() {
  const c10::cuda::CUDAGuard on_device(capture_->device);
  capture_->graph.replay();
}

#else

bool cuda_graphs_supported() { return false; }

struct CudaGraph::Capture {};

CudaGraph::CudaGraph(const c10::Device&, int, const std::function<void()>&) {
  throw Error("CUDA graph capture failed: CUDA graphs need a CUDA build of LibTorch 2 or later");
}

void CudaGraph::replay() { throw Error("internal: CUDA graphs need a CUDA build of LibTorch 2 or later"); }

#endif

CudaGraph::~CudaGraph() = default;

}  // namespace translution
