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

Transfer send_all(int fd, const uint8_t* data, size_t size, SteadyClock::time_point deadline) {
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::send(fd, data + done, size - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      done += size_t(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (!ready(fd, POLLOUT, deadline)) return Transfer::Late;
    } else {
      return Transfer::Closed;
    }
  }
  return Transfer::Done;
}

Transfer receive_all(int fd, uint8_t* data, size_t size, SteadyClock::time_point deadline) {
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::recv(fd, data + done, size - done, MSG_DONTWAIT);
    if (n > 0) {
      done += size_t(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (!ready(fd, POLLIN, deadline)) return Transfer::Late;
    } else {
      return Transfer::Closed;
    }
  }
  return Transfer::Done;
}

}  // namespace translution
