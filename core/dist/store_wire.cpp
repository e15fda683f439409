#include "dist/store_wire.h"

#include <algorithm>

#include "dist/socket.h"
#include "util/error.h"

namespace translution {
namespace {

bool known(uint32_t op) { return op >= uint32_t(StoreOp::Set) && op <= uint32_t(StoreOp::CompareSet); }

// What a header of `op` must carry beyond the bounds: Add an amount, Count nothing.
void check_shape(StoreOp op, uint32_t key, uint32_t value, uint32_t expected) {
  if (op == StoreOp::Add && value != 8)
    throw Error("an add request carries an amount of " + std::to_string(value) + " bytes, not 8");
  if (op == StoreOp::Count && (key != 0 || value != 0))
    throw Error("a count request carries a key or a value");
  if (op != StoreOp::CompareSet && expected != 0)
    throw Error("a request other than compare-and-set names " + std::to_string(expected) + " expected bytes");
  if (expected > value)
    throw Error("a compare-and-set request expects " + std::to_string(expected) + " of its " +
                std::to_string(value) + " bytes");
}

}  // namespace

std::vector<uint8_t> encode_store_request(const StoreRequest& request) {
  std::vector<uint8_t> b(kStoreRequestHeader + request.key.size() + request.value.size());
  put_u32(&b[0], uint32_t(request.op));
  put_u32(&b[4], uint32_t(request.key.size()));
  put_u32(&b[8], uint32_t(request.value.size()));
  put_u32(&b[12], request.expected_bytes);
  const auto value_at = std::copy(request.key.begin(), request.key.end(), b.begin() + kStoreRequestHeader);
  std::copy(request.value.begin(), request.value.end(), value_at);
  return b;
}

std::vector<uint8_t> encode_store_reply(const StoreReply& reply) {
  std::vector<uint8_t> b(kStoreReplyHeader + reply.value.size());
  put_u32(&b[0], uint32_t(reply.status));
  put_u32(&b[4], uint32_t(reply.value.size()));
  std::copy(reply.value.begin(), reply.value.end(), b.begin() + kStoreReplyHeader);
  return b;
}

std::optional<StoreRequest> take_store_request(const std::vector<uint8_t>& buffer, size_t& at) {
  if (buffer.size() < at + kStoreRequestHeader) return std::nullopt;
  const uint8_t* h = buffer.data() + at;
  const uint32_t op = get_u32(h), key = get_u32(h + 4), value = get_u32(h + 8), expected = get_u32(h + 12);
  if (!known(op)) throw Error("request " + std::to_string(op) + " is not one of the store's");
  if (key > kMaxStoreKeyBytes)
    throw Error("a key of " + std::to_string(key) + " bytes is beyond the bound of " +
                std::to_string(kMaxStoreKeyBytes));
  if (value > kMaxStoreValueBytes)
    throw Error("a value of " + std::to_string(value) + " bytes is beyond the bound of " +
                std::to_string(kMaxStoreValueBytes));
  check_shape(StoreOp(op), key, value, expected);
  if (buffer.size() < at + kStoreRequestHeader + key + value) return std::nullopt;
  const auto key_at = buffer.begin() + long(at + kStoreRequestHeader), value_at = key_at + key;
  StoreRequest request;
  request.op = StoreOp(op);
  request.key.assign(key_at, value_at);
  request.value.assign(value_at, value_at + value);
  request.expected_bytes = expected;
  at += kStoreRequestHeader + key + value;
  return request;
}

uint32_t decode_store_reply_header(const uint8_t* header, StoreStatus& status) {
  const uint32_t code = get_u32(header), size = get_u32(header + 4);
  if (code > uint32_t(StoreStatus::NotACount))
    throw Error("a reply of status " + std::to_string(code) + ", which the store does not give");
  if (size > kMaxStoreValueBytes)
    throw Error("a reply of " + std::to_string(size) + " bytes, beyond the bound of " +
                std::to_string(kMaxStoreValueBytes));
  status = StoreStatus(code);
  return size;
}

std::vector<uint8_t> encode_count(int64_t count) {
  std::vector<uint8_t> b(8);
  put_u32(&b[0], uint32_t(uint64_t(count) >> 32));
  put_u32(&b[4], uint32_t(uint64_t(count)));
  return b;
}

int64_t decode_count(const std::vector<uint8_t>& bytes) {
  if (bytes.size() != 8) throw Error("a count of " + std::to_string(bytes.size()) + " bytes, not 8");
  return int64_t(uint64_t(get_u32(&bytes[0])) << 32 | get_u32(&bytes[4]));
}

}  // namespace translution
