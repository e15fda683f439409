#include "util/kept_options.h"

#include <vector>

namespace translution {
namespace {
const char* const kKey = "engine_options";
}  // namespace

void keep_options(torch::autograd::AutogradContext* ctx, const EngineOptions& o) {
  ctx->saved_data[kKey] = std::vector<int64_t>{
      o.reference,           o.matrix_threads,      int64_t(o.projection),  o.recompute_pair_rows,
      o.cls_only_last_block, o.query_reassociation, int64_t(o.batch_split), o.bf16_tiles,
      int64_t(o.precision)};
}

EngineOptions kept_options(torch::autograd::AutogradContext* ctx) {
  const std::vector<int64_t> v = ctx->saved_data.at(kKey).toIntVector();
  EngineOptions o;
  o.reference = v.at(0) != 0;
  o.matrix_threads = int(v.at(1));
  o.projection = ProjectionAlgorithm(v.at(2));
  o.recompute_pair_rows = v.at(3) != 0;
  o.cls_only_last_block = v.at(4) != 0;
  o.query_reassociation = v.at(5) != 0;
  o.batch_split = BatchSplit(v.at(6));
  o.bf16_tiles = v.at(7) != 0;
  o.precision = DensePrecision(v.at(8));
  return o;
}

}  // namespace translution
