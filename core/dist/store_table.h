#pragma once
// The keys and values of rank 0's store, and what each request does to them: the meaning
// c10d's stores give set, get, add, check, delete, count and compare-and-set. Adds keep their
// count as decimal text, as c10d's stores do, so that get reads it as the other stores give it.
//
// The table holds at most `max_bytes` (keys, values and a small cost an entry): an admitted
// rank that keeps writing is answered Full, never given rank 0's memory.
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "dist/store_wire.h"

namespace translution {

constexpr size_t kMaxStoreTableBytes = size_t(512) << 20;

class StoreTable {
 public:
  explicit StoreTable(size_t max_bytes = kMaxStoreTableBytes) : max_bytes_(max_bytes) {}
  // Thread-safe: rank 0's own requests come from its threads, the others' from the server's.
  StoreReply apply(const StoreRequest& request);

 private:
  StoreReply put(const std::string& key, std::vector<uint8_t> value);
  StoreReply add(const std::string& key, int64_t amount);
  StoreReply compare_set(const StoreRequest& request);

  std::mutex mutex_;
  std::map<std::string, std::vector<uint8_t>> values_;
  size_t bytes_ = 0;
  size_t max_bytes_;
};

}  // namespace translution
