#pragma once
// A rank's side of rank 0's store (dist/store_server.h): rank 0 reaches its table in process,
// every other rank sends requests over the connection it was admitted on.
//
// The server answers every request at once, so what waits (get, wait) waits here, asking again
// after a pause that grows to a few milliseconds, until the key is there or `limit` has passed.
// Every request is bounded by its limit; a reply is read as the format bounds it (a stranger
// answering as rank 0 cannot size an allocation). Requests from several threads take turns on
// the one connection. Failures throw StoreFailure, which is not a translution::Error: the
// store's failure is a peer's, which ProcessGroup names.
#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "dist/socket.h"
#include "dist/store_wire.h"

namespace translution {

class StoreServer;

class StoreFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class StoreClient {
 public:
  using Limit = std::chrono::milliseconds;

  // Rank 0's own, to the table its server serves.
  explicit StoreClient(std::shared_ptr<StoreServer> server);
  // Another rank's, over the connection rank 0 admitted it on at `master` (for messages).
  StoreClient(Socket connection, std::string master);

  void set(const std::string& key, const std::vector<uint8_t>& value, Limit limit);
  std::vector<uint8_t> get(const std::string& key, Limit limit);  // waits for the key
  int64_t add(const std::string& key, int64_t amount, Limit limit);
  bool check(const std::vector<std::string>& keys, Limit limit);
  void wait(const std::vector<std::string>& keys, Limit limit);  // throws StoreFailure after `limit`
  bool remove(const std::string& key, Limit limit);
  int64_t count(Limit limit);
  // c10d's compare-and-set (dist/store_table.h): the value the key holds afterwards.
  std::vector<uint8_t> compare_set(const std::string& key, const std::vector<uint8_t>& expected,
                                   const std::vector<uint8_t>& desired, Limit limit);

 private:
  StoreReply exchange(const StoreRequest& request, SteadyClock::time_point deadline);
  StoreReply exchange_remote(const StoreRequest& request, SteadyClock::time_point deadline);
  StoreReply written(const StoreReply& reply, const std::string& key);
  void wait_for(const std::string& key, SteadyClock::time_point deadline, Limit limit);
  std::string where() const;

  std::shared_ptr<StoreServer> server_;  // rank 0
  Socket socket_;                        // the other ranks
  std::string master_;
  std::timed_mutex turn_;  // one request at a time on the connection
  std::string broken_;     // why the connection can carry no more requests (empty: it can)
};

}  // namespace translution
