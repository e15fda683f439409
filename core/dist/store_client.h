#pragma once
// A rank's side of rank 0's store (dist/store_server.h): rank 0 reaches its table in process,
// every other rank sends requests over the connection it was admitted on.
//
// The server answers every request at once, so what waits (get, wait) waits here, asking again
// after a pause that grows to a few milliseconds, until the key is there or `limit` has passed.
// Every request is bounded by its limit; a reply is read as the format bounds it (a stranger
// answering as rank 0 cannot size an allocation). Requests from several threads (the heartbeat's
// and the training's) take turns on the one connection.
//
// A request that runs out of time leaves the connection usable: the rest of it is sent, and its
// reply read and let go, before the next request goes, so a slow moment of rank 0 fails one
// request, not the run. A connection that closed, or carried
// what is not a reply, fails every request after. Failures throw StoreFailure, which is not a
// translution::Error: the store's failure is a peer's, which ProcessGroup names.
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
  StoreReply read_reply(SteadyClock::time_point deadline);
  void check(Transfer transfer);
  StoreReply written(const StoreReply& reply, const std::string& key);
  void wait_for(const std::string& key, SteadyClock::time_point deadline, Limit limit);
  std::string where() const;

  std::shared_ptr<StoreServer> server_;  // rank 0
  Socket socket_;                        // the other ranks
  std::string master_;
  std::timed_mutex turn_;                   // one request at a time on the connection; guards what follows
  std::string broken_;                      // why the connection can carry no more requests (empty: it can)
  bool outstanding_ = false;                // a request that ran out of time is not finished
  std::vector<uint8_t> unsent_;             // the last request,
  size_t unsent_at_ = 0;                    //   sent up to here
  uint8_t header_[kStoreReplyHeader] = {};  // the reply being read: its header,
  size_t header_got_ = 0;                   //   how much of it came,
  bool header_read_ = false;                //   whether all,
  StoreReply reading_;                      //   its value (sized by the header),
  size_t value_got_ = 0;                    //   and how much of that came
};

}  // namespace translution
