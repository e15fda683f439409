#include "dist/store_server.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/error.h"

namespace translution {
namespace {

constexpr size_t kReadChunk = size_t(256) << 10;
constexpr size_t kCutOffListed = 16;  // what cut_off() keeps

}  // namespace

struct StoreServer::Connection {
  int rank = 0;
  Socket socket;
  std::string peer;
  std::vector<uint8_t> in;   // what has arrived of the next request (or more)
  std::vector<uint8_t> out;  // what is left to send of the last reply
  size_t sent = 0;
};

StoreServer::StoreServer() {
  int fds[2];
  if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0)
    throw Error(std::string("rank 0 cannot serve its store: ") + std::strerror(errno));
  wake_read_ = Socket(fds[0]);
  wake_write_ = Socket(fds[1]);
  thread_ = std::thread([this] { run(); });
}

StoreServer::~StoreServer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  const char byte = 0;
  [[maybe_unused]] const ssize_t n = ::write(wake_write_.fd(), &byte, 1);
  thread_.join();
}

void StoreServer::serve(int rank, Socket connection, const std::string& peer) {
  auto c = std::make_unique<Connection>();
  c->rank = rank;
  c->socket = std::move(connection);
  c->peer = peer;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    incoming_.push_back(std::move(c));
  }
  const char byte = 0;
  [[maybe_unused]] const ssize_t n = ::write(wake_write_.fd(), &byte, 1);
}

std::vector<std::string> StoreServer::cut_off() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cut_off_;
}

void StoreServer::take_new() {
  char drain[64];
  while (::read(wake_read_.fd(), drain, sizeof drain) > 0) {
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& c : incoming_) connections_.push_back(std::move(c));
  incoming_.clear();
}

void StoreServer::run() {
  for (;;) {
    take_new();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stop_) return;
    }
    std::vector<pollfd> fds{{wake_read_.fd(), POLLIN, 0}};
    for (const auto& c : connections_)
      fds.push_back({c->socket.fd(), short(c->out.empty() ? POLLIN : POLLOUT), 0});
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
    for (size_t i = fds.size() - 1; i >= 1; --i)
      if (fds[i].revents != 0 && !pump(*connections_[i - 1], fds[i].revents))
        connections_.erase(connections_.begin() + long(i - 1));
  }
}

// Reads what has come, answers each whole request in turn, sends what it can; false once the
// connection is finished with (closed by the rank, broken, or cut off).
bool StoreServer::pump(Connection& c, short events) {
  if (c.out.empty() && (events & (POLLIN | POLLHUP | POLLERR))) {
    const size_t had = c.in.size();
    c.in.resize(had + kReadChunk);
    const ssize_t n = ::recv(c.socket.fd(), c.in.data() + had, kReadChunk, MSG_DONTWAIT);
    c.in.resize(had + size_t(std::max<ssize_t>(n, 0)));
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      if (!c.in.empty()) drop(c, "closed its connection in the middle of a request");
      return false;
    }
  }
  for (;;) {
    while (c.sent < c.out.size()) {
      const ssize_t n =
          ::send(c.socket.fd(), c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
      if (n <= 0) return false;  // the rank is gone; its peers learn it from its heartbeat
      c.sent += size_t(n);
    }
    c.out.clear();
    c.sent = 0;
    std::optional<StoreRequest> request;
    try {
      request = take_store_request(c.in);
    } catch (const Error& e) {
      drop(c, std::string("sent what is not a store request (") + e.what() + ")");
      return false;
    }
    if (!request) return true;
    c.out = encode_store_reply(table_.apply(*request));
  }
}

void StoreServer::drop(Connection& c, const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (cut_off_.size() < kCutOffListed)
    cut_off_.push_back("rank " + std::to_string(c.rank) + " (" + c.peer + ") " + why);
}

}  // namespace translution
