#include "nn/pair_order.h"

#include <ATen/ATen.h>

#include "util/error.h"

namespace translution {

PairOrder PairOrder::to(const c10::Device& device) const {
  PairOrder o = *this;
  o.pair_of_row = pair_of_row.to(device);
  o.query_of_row = query_of_row.to(device);
  o.source_of_row = source_of_row.to(device);
  return o;
}

PairOrder make_pair_order(const RelativeTable& table, int64_t queries) {
  PairOrder order;
  const int64_t N = table.tokens(), E = table.entries;
  if (queries < 0) queries = N;
  if (queries == 0 || queries > N)
    throw Error("internal: pair order for " + std::to_string(queries) + " queries of " + std::to_string(N) +
                " tokens");
  order.tokens = N;
  order.queries = queries;
  std::vector<std::vector<int64_t>> pairs_of(static_cast<size_t>(E));  // counting sort by entry
  for (int64_t p = 0; p < queries * N; ++p) {  // pair i N + j: the first `queries` rows
    if (!table.visible[size_t(p)]) continue;
    const int64_t e = table.entry_of[size_t(p)];
    if (e < 0 || e >= E) throw Error("internal: pair entry " + std::to_string(e) + " out of range");
    pairs_of[size_t(e)].push_back(p);
  }
  std::vector<int64_t> pairs, query_ids, sources;
  order.entry_offset.push_back(0);
  for (const auto& list : pairs_of) {
    for (int64_t p : list) {
      pairs.push_back(p);
      query_ids.push_back(p / N);
      sources.push_back(p % N);
    }
    order.entry_offset.push_back(int64_t(pairs.size()));
  }
  order.pair_of_row = at::tensor(pairs, at::kLong);
  order.query_of_row = at::tensor(query_ids, at::kLong);
  order.source_of_row = at::tensor(sources, at::kLong);
  return order;
}

PairOrders::PairOrders(const RelativeTable& table) {
  for (const int64_t queries : {table.tokens(), int64_t(1)}) get(table, queries, c10::Device(c10::kCPU));
}

const PairOrder& PairOrders::get(const RelativeTable& table, int64_t queries, const c10::Device& device) {
  return orders_.get({queries, device}, [&] {
    const PairOrder host = make_pair_order(table, queries);
    return device.is_cpu() ? host : host.to(device);
  });
}

}  // namespace translution
