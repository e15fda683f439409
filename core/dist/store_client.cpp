#include "dist/store_client.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "dist/store_server.h"
#include "util/error.h"

namespace translution {
namespace {

SteadyClock::time_point after(StoreClient::Limit limit) { return SteadyClock::now() + limit; }

// A request's deadline at the end of a wait: a second of its own however little of the wait is
// left, so that a wait given up reads "the key did not come", not a request cut short.
SteadyClock::time_point ask_by(SteadyClock::time_point deadline) {
  return std::max(deadline, SteadyClock::now() + std::chrono::seconds(1));
}

std::string seconds(StoreClient::Limit limit) {
  const double s = double(limit.count()) / 1000.0;
  char text[32];
  std::snprintf(text, sizeof text, "%g s", s);
  return text;
}

}  // namespace

StoreClient::StoreClient(std::shared_ptr<StoreServer> server) : server_(std::move(server)) {}

StoreClient::StoreClient(Socket connection, std::string master)
    : socket_(std::move(connection)), master_(std::move(master)) {}

std::string StoreClient::where() const {
  return server_ ? "this rank's store" : "rank 0's store at " + master_;
}

StoreReply StoreClient::exchange(const StoreRequest& request, SteadyClock::time_point deadline) {
  if (request.key.size() > kMaxStoreKeyBytes || request.value.size() > kMaxStoreValueBytes)
    throw StoreFailure("the store takes keys of at most " + std::to_string(kMaxStoreKeyBytes) +
                       " bytes and values of at most " + std::to_string(kMaxStoreValueBytes >> 20) +
                       " MB, not " + std::to_string(request.key.size()) + " and " +
                       std::to_string(request.value.size()));
  if (server_) return server_->table().apply(request);
  if (!turn_.try_lock_until(deadline))
    throw StoreFailure(where() + " is busy with this rank's other requests past the deadline");
  const std::lock_guard<std::timed_mutex> lock(turn_, std::adopt_lock);
  if (!broken_.empty()) throw StoreFailure(broken_);
  return exchange_remote(request, deadline);
}

// Called holding the turn. At most one request is ever outstanding: one left by a request that
// ran out of time is finished first (the rest of its bytes sent, its reply read and let go), so
// neither side is ever sending a large message to one that is sending too.
StoreReply StoreClient::exchange_remote(const StoreRequest& request, SteadyClock::time_point deadline) {
  if (outstanding_) {
    check(send_all(socket_.fd(), unsent_.data(), unsent_.size(), deadline, &unsent_at_));
    (void)read_reply(deadline);
    outstanding_ = false;
  }
  unsent_ = encode_store_request(request);
  unsent_at_ = 0;
  outstanding_ = true;
  const Transfer sent = send_all(socket_.fd(), unsent_.data(), unsent_.size(), deadline, &unsent_at_);
  if (sent == Transfer::Late && unsent_at_ == 0) outstanding_ = false;  // not a byte went: it is not made
  check(sent);
  StoreReply reply = read_reply(deadline);
  outstanding_ = false;
  return reply;
}

// Called holding the turn: reads on where the last reading stopped.
StoreReply StoreClient::read_reply(SteadyClock::time_point deadline) {
  if (!header_read_) {
    check(receive_all(socket_.fd(), header_, sizeof header_, deadline, &header_got_));
    try {
      reading_.value.resize(decode_store_reply_header(header_, reading_.status));
    } catch (const Error& e) {
      broken_ = where() + " answered what is not a store reply: " + e.what();
      throw StoreFailure(broken_);
    }
    header_read_ = true;
    value_got_ = 0;
  }
  check(receive_all(socket_.fd(), reading_.value.data(), reading_.value.size(), deadline, &value_got_));
  header_read_ = false;
  header_got_ = 0;
  return std::move(reading_);
}

// A closed connection fails every request after; a late one, this request alone.
void StoreClient::check(Transfer transfer) {
  if (transfer == Transfer::Closed) {
    broken_ = where() + " closed the connection (rank 0 ended?)";
    throw StoreFailure(broken_);
  }
  if (transfer == Transfer::Late) throw StoreFailure(where() + " did not answer in time (a stopped rank 0?)");
}

StoreReply StoreClient::written(const StoreReply& reply, const std::string& key) {
  if (reply.status == StoreStatus::Full)
    throw StoreFailure(where() + " is full: it holds at most " + std::to_string(kMaxStoreTableBytes >> 20) +
                       " MB (writing " + key + ")");
  if (reply.status == StoreStatus::NotACount)
    throw StoreFailure(where() + " holds what is not a count at " + key);
  return reply;
}

void StoreClient::set(const std::string& key, const std::vector<uint8_t>& value, Limit limit) {
  written(exchange({StoreOp::Set, key, value, 0}, after(limit)), key);
}

std::vector<uint8_t> StoreClient::get(const std::string& key, Limit limit) {
  const SteadyClock::time_point deadline = after(limit);
  wait_for(key, deadline, limit);
  StoreReply reply = exchange({StoreOp::Get, key, {}, 0}, ask_by(deadline));
  if (reply.status != StoreStatus::Ok) throw StoreFailure(where() + " lost the key " + key);
  return std::move(reply.value);
}

int64_t StoreClient::add(const std::string& key, int64_t amount, Limit limit) {
  const StoreReply reply = written(exchange({StoreOp::Add, key, encode_count(amount), 0}, after(limit)), key);
  try {
    return decode_count(reply.value);
  } catch (const Error& e) {
    throw StoreFailure(where() + " answered an add with " + e.what());
  }
}

bool StoreClient::check(const std::vector<std::string>& keys, Limit limit) {
  const SteadyClock::time_point deadline = after(limit);
  return std::all_of(keys.begin(), keys.end(), [&](const std::string& key) {
    return exchange({StoreOp::Check, key, {}, 0}, deadline).status == StoreStatus::Ok;
  });
}

void StoreClient::wait(const std::vector<std::string>& keys, Limit limit) {
  const SteadyClock::time_point deadline = after(limit);
  for (const std::string& key : keys) wait_for(key, deadline, limit);
}

// Asks until `key` is there, pausing 1 ms, then twice as long each time up to 32 ms.
void StoreClient::wait_for(const std::string& key, SteadyClock::time_point deadline, Limit limit) {
  for (auto pause = std::chrono::milliseconds(1);;
       pause = std::min(2 * pause, std::chrono::milliseconds(32))) {
    if (exchange({StoreOp::Check, key, {}, 0}, ask_by(deadline)).status == StoreStatus::Ok) return;
    if (SteadyClock::now() + pause > deadline)
      throw StoreFailure("the key " + key + " did not come to " + where() + " within " + seconds(limit));
    std::this_thread::sleep_for(pause);
  }
}

bool StoreClient::remove(const std::string& key, Limit limit) {
  return exchange({StoreOp::Delete, key, {}, 0}, after(limit)).status == StoreStatus::Ok;
}

int64_t StoreClient::count(Limit limit) {
  const StoreReply reply = exchange({StoreOp::Count, {}, {}, 0}, after(limit));
  try {
    return decode_count(reply.value);
  } catch (const Error& e) {
    throw StoreFailure(where() + " answered a count with " + e.what());
  }
}

std::vector<uint8_t> StoreClient::compare_set(const std::string& key, const std::vector<uint8_t>& expected,
                                              const std::vector<uint8_t>& desired, Limit limit) {
  StoreRequest request{StoreOp::CompareSet, key, expected, uint32_t(expected.size())};
  request.value.insert(request.value.end(), desired.begin(), desired.end());
  return written(exchange(request, after(limit)), key).value;
}

}  // namespace translution
