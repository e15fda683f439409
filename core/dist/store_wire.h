#pragma once
// What a rank and rank 0's store say to each other over the connection rank 0 admitted the
// rank on (dist/rendezvous_handshake.h). One request, then its reply; integers big-endian.
//
//   request: op (4), key bytes (4), value bytes (4), expected bytes (4), the key, the value.
//     Add's value is the amount (8); CompareSet's is the expected bytes, then the desired.
//   reply: status (4), value bytes (4), the value. Add and Count answer a count (8).
//
// Every size is checked against its bound as soon as its header is in, before anything is
// allocated for it: a header that is not a request or a reply is an Error, never a length.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace translution {

enum class StoreOp : uint32_t { Set = 1, Get = 2, Add = 3, Check = 4, Delete = 5, Count = 6, CompareSet = 7 };
enum class StoreStatus : uint32_t {
  Ok = 0,
  Missing = 1,    // Get, Check, Delete: no such key
  Full = 2,       // Set, Add, CompareSet: the table is at its bound
  NotACount = 3,  // Add: the key holds something else than a count
};

constexpr size_t kStoreRequestHeader = 16;
constexpr size_t kStoreReplyHeader = 8;
// Keys are c10d's and this engine's names; values are fingerprints and Gloo's addresses, a
// few kilobytes a rank (the bound leaves room for tens of thousands of ranks).
constexpr uint32_t kMaxStoreKeyBytes = 4096;
constexpr uint32_t kMaxStoreValueBytes = 64u << 20;

struct StoreRequest {
  StoreOp op = StoreOp::Get;
  std::string key;
  std::vector<uint8_t> value;
  uint32_t expected_bytes = 0;  // CompareSet: how much of the value is the expected one
};

struct StoreReply {
  StoreStatus status = StoreStatus::Ok;
  std::vector<uint8_t> value;
};

std::vector<uint8_t> encode_store_request(const StoreRequest& request);
std::vector<uint8_t> encode_store_reply(const StoreReply& reply);

// The whole request in `buffer` from byte `at`, which then moves past it; nullopt while it is
// not all there. Throws Error saying what is wrong with a header that is not a request.
std::optional<StoreRequest> take_store_request(const std::vector<uint8_t>& buffer, size_t& at);

// A reply's header: sets `status` and returns the size of the value, both checked (throws Error).
uint32_t decode_store_reply_header(const uint8_t* header, StoreStatus& status);

std::vector<uint8_t> encode_count(int64_t count);
// Throws Error where `bytes` are not a count's 8.
int64_t decode_count(const std::vector<uint8_t>& bytes);

}  // namespace translution
