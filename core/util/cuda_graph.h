#pragma once
// Work that LibTorch queues on a GPU, recorded once as a CUDA graph and replayed
// with one call: a step of a few hundred small kernels then costs one launch
// instead of a few hundred (docs/performance.md, "GPU and CUDA graphs").
//
// The work must then touch no host memory and never wait on the device, and it
// reads and writes the same device tensors on every replay: its inputs are copied
// into tensors it captured, and its outputs are views of the graph's own memory.
// Available with a CUDA build of LibTorch 2 or later (cuda_graphs_supported()).
#include <cstdint>
#include <functional>
#include <memory>

#include <c10/core/Device.h>

namespace translution {

// Whether this build can capture CUDA graphs (a CUDA LibTorch, version 2 or later).
bool cuda_graphs_supported();

class CudaGraph {
 public:
  // Runs `work` `warmups` times on a stream of its own (so that the operators'
  // device constants, cuBLAS's workspace for the stream and the allocator's blocks
  // exist), then captures one more run. The capture's mode is thread-local: other
  // threads' CUDA work neither breaks nor is broken by it. Throws
  // translution::Error("CUDA graph capture failed: ...") where the build cannot
  // capture or the capture fails; the device is then left clean for eager work.
  CudaGraph(const c10::Device& device, int warmups, const std::function<void()>& work);
  ~CudaGraph();
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  // Replays the captured work on the current stream, after what is queued there.
  void replay();

  // What one replay launches: the captured graph's kernel nodes, and its other nodes
  // (copies, memsets, event records). -1 where CUDA did not say.
  int64_t kernels() const { return kernels_; }
  int64_t other_nodes() const { return other_nodes_; }

 private:
  struct Capture;  // the graph, where the build has one
  std::unique_ptr<Capture> capture_;
  int64_t kernels_ = -1, other_nodes_ = -1;
};

}  // namespace translution
