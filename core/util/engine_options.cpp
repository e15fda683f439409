#include "util/engine_options.h"

#include "util/error.h"

namespace translution {
ProjectionAlgorithm parse_projection_algorithm(const std::string& name) {
  if (name == "auto") return ProjectionAlgorithm::Auto;
  if (name == "per-matrix") return ProjectionAlgorithm::PerMatrix;
  if (name == "all-tokens") return ProjectionAlgorithm::AllTokens;
  if (name == "offset-batched") return ProjectionAlgorithm::OffsetBatched;
  throw Error("unknown algorithm '" + name + "' (expected auto, per-matrix, all-tokens or offset-batched)");
}

const char* projection_algorithm_name(ProjectionAlgorithm algorithm) {
  switch (algorithm) {
    case ProjectionAlgorithm::Auto: return "auto";
    case ProjectionAlgorithm::PerMatrix: return "per-matrix";
    case ProjectionAlgorithm::AllTokens: return "all-tokens";
    case ProjectionAlgorithm::OffsetBatched: return "offset-batched";
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
