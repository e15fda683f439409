#pragma once
// Rank 0's store, served to the ranks it admitted, each over the connection it was admitted on
// (dist/rendezvous_handshake.h): no port of its own, so nothing that did not pass the
// handshake can reach it.
//
// One thread serves every connection and never waits on one: the sockets are non-blocking and
// one poll watches them all, so a rank that sends half a request, or stops reading its replies,
// holds up no other. A connection takes one request at a time (its reply is sent before the
// next is read), which bounds what it holds to one request and one reply; what all of them
// hold together is bounded too (kMaxStoreBuffered). A rank that sends what is not a request,
// or more than that bound allows, is cut off, and remembered with what it did.
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dist/socket.h"
#include "dist/store_table.h"

namespace translution {

// What the connections may hold at once, of requests arriving and replies leaving, beyond the
// table: a process admitted as many ranks cannot make rank 0 hold more.
constexpr size_t kMaxStoreBuffered = size_t(256) << 20;

class StoreServer {
 public:
  StoreServer();
  ~StoreServer();  // stops serving, closes every connection
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  // What rank 0's own requests go to.
  StoreTable& table() { return table_; }

  // Serves `connection` (non-blocking) from now on, for `rank` at `peer` (for messages).
  // Thread-safe.
  void serve(int rank, Socket connection, const std::string& peer);

  // The connections cut off for breaking the protocol: "rank 1 (10.0.0.7:51812) sent ...".
  std::vector<std::string> cut_off() const;

 private:
  struct Connection;
  void run();
  void take_new();
  bool pump(Connection& c, short events);
  bool receive(Connection& c);
  bool answer(Connection& c);
  size_t buffered() const;
  void note(const std::string& line) noexcept;
  void drop(Connection& c, const std::string& why) noexcept;

  StoreTable table_;
  Socket wake_read_, wake_write_;  // a pipe: a byte written wakes the poll
  mutable std::mutex mutex_;       // guards incoming_, stop_ and cut_off_
  std::vector<std::unique_ptr<Connection>> incoming_;
  std::vector<std::string> cut_off_;
  bool stop_ = false;
  std::vector<std::unique_ptr<Connection>> connections_;  // the server thread's own
  std::vector<uint8_t> scratch_;                          // what one read takes in
  std::thread thread_;
};

}  // namespace translution
