#include "dist/socket.h"

#include <algorithm>
#include <cerrno>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace translution {

Socket::~Socket() {
  if (fd_ >= 0) ::close(fd_);
}

int remaining_ms(SteadyClock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now()).count();
  return int(std::clamp<int64_t>(left, 0, 1 << 30));
}

bool ready(int fd, short events, SteadyClock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, remaining_ms(deadline));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return true;
  }
}

namespace {

// send_all and receive_all: `step` moves what it can (send or recv), waiting for `events`.
template <typename Step>
Transfer move_all(int fd, size_t size, short events, SteadyClock::time_point deadline, size_t* progress,
                  Step step) {
  size_t own = 0;
  size_t& done = progress ? *progress : own;
  while (done < size) {
    const ssize_t n = step(done);
    if (n > 0) {
      done += size_t(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (!ready(fd, events, deadline)) return Transfer::Late;
    } else {
      return Transfer::Closed;
    }
  }
  return Transfer::Done;
}

}  // namespace

Transfer send_all(int fd, const uint8_t* data, size_t size, SteadyClock::time_point deadline, size_t* done) {
  return move_all(fd, size, POLLOUT, deadline, done,
                  [&](size_t at) { return ::send(fd, data + at, size - at, MSG_NOSIGNAL | MSG_DONTWAIT); });
}

Transfer receive_all(int fd, uint8_t* data, size_t size, SteadyClock::time_point deadline, size_t* done) {
  return move_all(fd, size, POLLIN, deadline, done,
                  [&](size_t at) { return ::recv(fd, data + at, size - at, MSG_DONTWAIT); });
}

}  // namespace translution
