#pragma once
// An owned socket descriptor, and waiting on one with a deadline: what the rendezvous
// handshake and the ranks' store share. Every wait here is bounded; nothing reads a length.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace translution {

using SteadyClock = std::chrono::steady_clock;

// A descriptor closed with its owner.
class Socket {
 public:
  explicit Socket(int fd = -1) : fd_(fd) {}
  Socket(Socket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Socket& operator=(Socket&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket();
  int fd() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Milliseconds left until `deadline`, 0 once it passed.
int remaining_ms(SteadyClock::time_point deadline);

// Whether `fd` is ready for `events` (POLLIN, POLLOUT) before `deadline`; false once it passed.
// An error on the descriptor counts as ready: the read or write that follows reports it.
bool ready(int fd, short events, SteadyClock::time_point deadline);

// How a whole transfer ended.
enum class Transfer { Done, Late, Closed };

// A 32-bit integer on the wire: big-endian, as every message of the rendezvous and the store.
inline void put_u32(uint8_t* at, uint32_t v) {
  for (int i = 0; i < 4; ++i) at[i] = uint8_t(v >> (24 - 8 * i));
}
inline uint32_t get_u32(const uint8_t* at) {
  return uint32_t(at[0]) << 24 | uint32_t(at[1]) << 16 | uint32_t(at[2]) << 8 | uint32_t(at[3]);
}

// Writes `data` from byte `*done` (0 where `done` is null) to its end, to the non-blocking `fd`,
// before `deadline`; `*done` says how far it got, so that a transfer cut short can go on.
Transfer send_all(int fd, const uint8_t* data, size_t size, SteadyClock::time_point deadline,
                  size_t* done = nullptr);
// Reads into `data` from byte `*done` to its end, from the non-blocking `fd`, likewise.
Transfer receive_all(int fd, uint8_t* data, size_t size, SteadyClock::time_point deadline,
                     size_t* done = nullptr);

}  // namespace translution
