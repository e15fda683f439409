#include "dist/store_table.h"

#include <stdexcept>

namespace translution {
namespace {

constexpr size_t kEntryCost = 64;  // what a map entry costs beyond its key and value

size_t cost(const std::string& key, size_t value_bytes) { return key.size() + value_bytes + kEntryCost; }

// The count a value holds as decimal text ("-3", "12"), or false where it holds something else.
bool read_count(const std::vector<uint8_t>& value, int64_t& count) {
  const std::string text(value.begin(), value.end());
  const size_t digits_at = !text.empty() && text[0] == '-' ? 1 : 0;
  if (text.size() == digits_at || text.size() > 20 ||
      text.find_first_not_of("0123456789", digits_at) != std::string::npos)
    return false;
  try {
    count = std::stoll(text);
    return true;
  } catch (const std::out_of_range&) {
    return false;
  }
}

}  // namespace

StoreReply StoreTable::apply(const StoreRequest& r) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = values_.find(r.key);
  const bool here = found != values_.end();
  switch (r.op) {
    case StoreOp::Set: return put(r.key, r.value);
    case StoreOp::Get:
      return here ? StoreReply{StoreStatus::Ok, found->second} : StoreReply{StoreStatus::Missing, {}};
    case StoreOp::Add: return add(r.key, decode_count(r.value));
    case StoreOp::Check: return {here ? StoreStatus::Ok : StoreStatus::Missing, {}};
    case StoreOp::Delete:
      if (!here) return {StoreStatus::Missing, {}};
      bytes_ -= cost(r.key, found->second.size());
      values_.erase(found);
      return {};
    case StoreOp::Count: return {StoreStatus::Ok, encode_count(int64_t(values_.size()))};
    case StoreOp::CompareSet: return compare_set(r);
  }
  return {StoreStatus::Missing, {}};
}

// Called under the lock.
StoreReply StoreTable::put(const std::string& key, std::vector<uint8_t> value) {
  const auto found = values_.find(key);
  const size_t old = found == values_.end() ? 0 : cost(key, found->second.size());
  const size_t now = bytes_ - old + cost(key, value.size());
  if (now > max_bytes_) return {StoreStatus::Full, {}};
  bytes_ = now;
  values_[key] = std::move(value);
  return {};
}

// Called under the lock. A count that would overflow is not a count either.
StoreReply StoreTable::add(const std::string& key, int64_t amount) {
  int64_t count = 0;
  const auto found = values_.find(key);
  if (found != values_.end() && !read_count(found->second, count)) return {StoreStatus::NotACount, {}};
  if (__builtin_add_overflow(count, amount, &count)) return {StoreStatus::NotACount, {}};
  const std::string text = std::to_string(count);
  StoreReply stored = put(key, std::vector<uint8_t>(text.begin(), text.end()));
  if (stored.status != StoreStatus::Ok) return stored;
  return {StoreStatus::Ok, encode_count(count)};
}

// Called under the lock. As c10d's stores: where the key holds the expected value, or is absent
// and the expected value empty, it takes the desired one; the reply is the value it then holds
// (for an absent key not set, the expected value).
StoreReply StoreTable::compare_set(const StoreRequest& r) {
  const std::vector<uint8_t> expected(r.value.begin(), r.value.begin() + long(r.expected_bytes));
  std::vector<uint8_t> desired(r.value.begin() + long(r.expected_bytes), r.value.end());
  const auto found = values_.find(r.key);
  if (found == values_.end() && !expected.empty()) return {StoreStatus::Ok, expected};
  if (found != values_.end() && found->second != expected) return {StoreStatus::Ok, found->second};
  StoreReply stored = put(r.key, desired);
  if (stored.status != StoreStatus::Ok) return stored;
  return {StoreStatus::Ok, std::move(desired)};
}

}  // namespace translution
