#pragma once
// Values made once per key and kept while their owner lives, each at a stable address
// (callers keep references), looked up under a lock: an operator's constants on a
// device, which a forward on a GPU must not copy from the host each time (the copy
// would wait on the stream, and a CUDA graph cannot hold it).
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace translution {

template <typename Key, typename Value>
class BuiltOnce {
 public:
  // The value for `key`, made by `make()` the first time it is asked for.
  template <typename Make>
  const Value& get(const Key& key, const Make& make) {
    const std::lock_guard<std::mutex> hold(lock_);
    for (const auto& [k, value] : values_)
      if (k == key) return *value;
    values_.emplace_back(key, std::make_unique<Value>(make()));
    return *values_.back().second;
  }

 private:
  std::mutex lock_;
  std::vector<std::pair<Key, std::unique_ptr<Value>>> values_;  // a few keys: a scan is enough
};

}  // namespace translution
