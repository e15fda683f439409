#include "util/engine_options.h"

#include <atomic>

#include "util/error.h"

namespace translution {
namespace {
const EngineOptions kDefaults;
// The hot paths read the options at every product: one atomic load of a pointer
// to a set that never changes while it is installed.
std::atomic<const EngineOptions*> g_options{&kDefaults};
}  // namespace

const EngineOptions& engine_options() { return *g_options.load(std::memory_order_acquire); }

ScopedEngineOptions::ScopedEngineOptions(const EngineOptions& options)
    : options_(options), before_(g_options.load(std::memory_order_acquire)) {
  g_options.store(&options_, std::memory_order_release);
}

ScopedEngineOptions::~ScopedEngineOptions() { g_options.store(before_, std::memory_order_release); }

ProjectionAlgorithm parse_projection_algorithm(const std::string& name) {
  if (name == "auto") return ProjectionAlgorithm::Auto;
  if (name == "per-matrix") return ProjectionAlgorithm::PerMatrix;
  if (name == "all-tokens") return ProjectionAlgorithm::AllTokens;
  throw Error("unknown algorithm '" + name + "' (expected auto, per-matrix or all-tokens)");
}

const char* projection_algorithm_name(ProjectionAlgorithm algorithm) {
  switch (algorithm) {
    case ProjectionAlgorithm::Auto: return "auto";
    case ProjectionAlgorithm::PerMatrix: return "per-matrix";
    case ProjectionAlgorithm::AllTokens: return "all-tokens";
  }
  return "?";
}

BatchSplit parse_batch_split(const std::string& name) {
  if (name == "auto") return BatchSplit::Auto;
  if (name == "on") return BatchSplit::On;
  if (name == "off") return BatchSplit::Off;
  throw Error("unknown batch split '" + name + "' (expected auto, on or off)");
}

}  // namespace translution
