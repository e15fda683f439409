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

// Empties `bytes`, giving its memory back where a large message left it large: a connection
// keeps no more than a read's worth between messages.
void release(std::vector<uint8_t>& bytes) {
  if (bytes.capacity() > 4 * kReadChunk)
    std::vector<uint8_t>().swap(bytes);
  else
    bytes.clear();
}

}  // namespace

struct StoreServer::Connection {
  int rank = 0;
  Socket socket;
  std::string peer;
  std::vector<uint8_t> in;  // what has arrived, from byte in_at on not yet taken as a request
  size_t in_at = 0;
  std::vector<uint8_t> out;  // the last reply, sent up to byte `sent`
  size_t sent = 0;
};

StoreServer::StoreServer() : scratch_(kReadChunk) {
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

// Never throws: it is what the server thread does when something has gone wrong.
void StoreServer::note(const std::string& line) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cut_off_.size() < kCutOffListed) cut_off_.push_back(line);
  } catch (...) {
    // out of memory for the note itself: the connection still goes
  }
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
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) {
      note(std::string("rank 0's store stopped serving: ") + std::strerror(errno));
      return;  // the ranks' requests go unanswered: each fails at its deadline
    }
    for (size_t i = fds.size() - 1; i >= 1; --i) {
      bool keep = false;
      if (fds[i].revents == 0) continue;
      try {
        keep = pump(*connections_[i - 1], fds[i].revents);
      } catch (const std::exception& e) {  // out of memory: this connection's request goes unserved
        drop(*connections_[i - 1], std::string("could not be served: ") + e.what());
      }
      if (!keep) connections_.erase(connections_.begin() + long(i - 1));
    }
  }
}

// Reads what has come, answers each whole request in turn, sends what it can; false once the
// connection is finished with (closed by the rank, broken, or cut off).
bool StoreServer::pump(Connection& c, short events) {
  if (c.out.empty() && (events & (POLLIN | POLLHUP | POLLERR)) && !receive(c)) return false;
  return answer(c);
}

// Takes in what one read gives, after what is left of earlier reads.
bool StoreServer::receive(Connection& c) {
  const ssize_t n = ::recv(c.socket.fd(), scratch_.data(), scratch_.size(), MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
  if (n <= 0) {
    if (c.in.size() > c.in_at) drop(c, "closed its connection in the middle of a request");
    return false;
  }
  if (buffered() + size_t(n) > kMaxStoreBuffered) {
    drop(c,
         "sent more than rank 0's store holds at once (" + std::to_string(kMaxStoreBuffered >> 20) + " MB)");
    return false;
  }
  c.in.erase(c.in.begin(), c.in.begin() + long(c.in_at));
  c.in_at = 0;
  c.in.insert(c.in.end(), scratch_.begin(), scratch_.begin() + n);
  return true;
}

// Sends what is left of the last reply, then answers the next whole request, until a reply
// waits for the rank to read it or no whole request is left.
bool StoreServer::answer(Connection& c) {
  for (;;) {
    while (c.sent < c.out.size()) {
      const ssize_t n =
          ::send(c.socket.fd(), c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
      if (n <= 0) return false;  // the rank is gone; its peers learn it from its heartbeat
      c.sent += size_t(n);
    }
    release(c.out);
    c.sent = 0;
    std::optional<StoreRequest> request;
    try {
      request = take_store_request(c.in, c.in_at);
    } catch (const Error& e) {
      drop(c, std::string("sent what is not a store request (") + e.what() + ")");
      return false;
    }
    if (c.in_at == c.in.size()) {
      release(c.in);
      c.in_at = 0;
    }
    if (!request) return true;
    StoreReply reply = table_.apply(*request);
    if (buffered() + reply.value.size() > kMaxStoreBuffered) {
      drop(c, "asked for more than rank 0's store sends at once (" + std::to_string(kMaxStoreBuffered >> 20) +
                  " MB)");
      return false;
    }
    c.out = encode_store_reply(reply);
  }
}

// What the connections hold: requests not yet taken, replies not yet sent.
size_t StoreServer::buffered() const {
  size_t bytes = 0;
  for (const auto& c : connections_) bytes += c->in.size() - c->in_at + c->out.size() - c->sent;
  return bytes;
}

void StoreServer::drop(Connection& c, const std::string& why) noexcept {
  try {
    note("rank " + std::to_string(c.rank) + " (" + c.peer + ") " + why);
  } catch (...) {
    // as in note()
  }
}

}  // namespace translution
