#include "dist/rendezvous_handshake.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <utility>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dist/socket.h"
#include "util/error.h"

namespace translution {
namespace {

using Clock = SteadyClock;

// The offsets of the fields (rendezvous_handshake.h lays them out).
constexpr size_t kVersionAt = 8, kRankAt = 12, kWorldAt = 16, kHelloNonceAt = 20;
constexpr size_t kVerdictAt = 12, kValueAt = 16, kReplyNonceAt = 20, kReplyProofAt = 36;
constexpr size_t kProofAt = 8, kLastVerdictAt = 8, kLastValueAt = 12;
static_assert(kHelloNonceAt + sizeof(Nonce) <= kHelloBytes && kReplyProofAt + 32 <= kReplyBytes &&
              kProofAt + 32 <= kProofBytes && kLastValueAt + 4 <= kVerdictBytes);

// Connections rank 0 holds open at once while they send their hello: a flood of them
// (a port scanner, say) costs this many descriptors, the oldest giving way to the newest.
constexpr size_t kMaxPending = 32;
// What rank 0's missing-rank message lists of the connections it turned away.
constexpr size_t kTurnedAwayListed = 3;

struct HostPort {
  std::string host;
  std::string port;
};

// "HOST:PORT" (checked by GroupOptions::validate), brackets of "[::1]:PORT" removed.
HostPort split(const std::string& master) {
  const size_t colon = master.rfind(':');
  if (colon == std::string::npos) throw Error("--master " + master + " is not HOST:PORT");
  std::string host = master.substr(0, colon);
  if (host.size() > 1 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return {host, master.substr(colon + 1)};
}

std::string peer_name(const sockaddr_storage& a) {
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (a.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
    ::inet_ntop(AF_INET, &v4.sin_addr, host, sizeof host);
    port = ntohs(v4.sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
    ::inet_ntop(AF_INET6, &v6.sin6_addr, host, sizeof host);
    port = ntohs(v6.sin6_port);
  }
  std::string name = host;
  if (name.rfind("::ffff:", 0) == 0) name = name.substr(7);  // an IPv4 peer on the dual-stack socket
  return name + ":" + std::to_string(port);
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

}  // namespace

Nonce fresh_nonce() {
  std::random_device source;
  Nonce nonce;
  for (size_t i = 0; i < nonce.size(); i += 4) put_u32(&nonce[i], source());
  return nonce;
}

Sha256Digest rendezvous_proof(const std::string& run_id, bool by_rank_zero, const Hello& hello,
                              const Nonce& rank_zero_nonce) {
  const std::string who = by_rank_zero ? "translution rendezvous: rank 0" : "translution rendezvous: rank";
  std::vector<uint8_t> message(who.begin(), who.end());
  message.insert(message.end(), hello.nonce.begin(), hello.nonce.end());
  message.insert(message.end(), rank_zero_nonce.begin(), rank_zero_nonce.end());
  uint8_t numbers[8];
  put_u32(numbers, hello.rank);
  put_u32(numbers + 4, hello.world_size);
  message.insert(message.end(), numbers, numbers + 8);
  return hmac_sha256(run_id, message);
}

std::array<uint8_t, kHelloBytes> encode_hello(const Hello& hello) {
  std::array<uint8_t, kHelloBytes> b{};
  std::memcpy(b.data(), kRendezvousMagic, sizeof kRendezvousMagic);
  put_u32(&b[kVersionAt], hello.version);
  put_u32(&b[kRankAt], hello.rank);
  put_u32(&b[kWorldAt], hello.world_size);
  std::copy(hello.nonce.begin(), hello.nonce.end(), b.begin() + kHelloNonceAt);
  return b;
}

std::optional<Hello> decode_hello(const std::array<uint8_t, kHelloBytes>& b) {
  if (std::memcmp(b.data(), kRendezvousMagic, sizeof kRendezvousMagic) != 0) return std::nullopt;
  Hello h;
  h.version = get_u32(&b[kVersionAt]);
  h.rank = get_u32(&b[kRankAt]);
  h.world_size = get_u32(&b[kWorldAt]);
  std::copy(b.begin() + kHelloNonceAt, b.begin() + kHelloNonceAt + h.nonce.size(), h.nonce.begin());
  return h;
}

std::array<uint8_t, kReplyBytes> encode_reply(const Reply& reply) {
  std::array<uint8_t, kReplyBytes> b{};
  std::memcpy(b.data(), kRendezvousMagic, sizeof kRendezvousMagic);
  put_u32(&b[kVersionAt], reply.version);
  put_u32(&b[kVerdictAt], uint32_t(reply.verdict));
  put_u32(&b[kValueAt], reply.value);
  std::copy(reply.nonce.begin(), reply.nonce.end(), b.begin() + kReplyNonceAt);
  std::copy(reply.proof.begin(), reply.proof.end(), b.begin() + kReplyProofAt);
  return b;
}

std::string quoted_bytes(const uint8_t* bytes, size_t size, size_t limit) {
  std::string out;
  for (size_t i = 0; i < std::min(size, limit); ++i) {
    const uint8_t c = bytes[i];
    if (c == '\r')
      out += "\\r";
    else if (c == '\n')
      out += "\\n";
    else if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"')
      out += char(c);
    else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return size > limit ? out + "..." : out;
}

// ---- rank 0 ----

namespace {

// Binds the rendezvous port on every interface: IPv6 with IPv4 mapped where the system has
// it, else IPv4. SO_REUSEADDR lets a port left in TIME_WAIT by an earlier run be bound; a
// port another process listens on is still refused.
int bind_listener(const std::string& master, uint16_t port) {
  int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const bool v6 = fd >= 0;
  if (!v6) fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw Error("--master " + master + ": rank 0 cannot open a socket: " + std::strerror(errno));
  Socket owner(fd);
  const int on = 1, off = 0;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_storage address{};
  socklen_t length;
  if (v6) {
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
    auto& a = reinterpret_cast<sockaddr_in6&>(address);
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(port);
    length = sizeof a;
  } else {
    auto& a = reinterpret_cast<sockaddr_in&>(address);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(port);
    length = sizeof a;
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 || ::listen(fd, 64) != 0) {
    if (errno == EADDRINUSE)
      throw Error("--master " + master + ": port " + std::to_string(port) +
                  " is in use on this machine (another run's rank 0?): choose another port");
    throw Error("--master " + master + ": rank 0 cannot serve the rendezvous there: " + std::strerror(errno));
  }
  return owner.release();
}

uint16_t bound_port(int fd) {
  sockaddr_storage a{};
  socklen_t length = sizeof a;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length) != 0) return 0;
  return ntohs(a.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(a).sin6_port
                                       : reinterpret_cast<sockaddr_in&>(a).sin_port);
}

// A connection whose hello has not fully arrived.
// A connection being admitted: its hello coming in, or (proving) its proof.
struct Pending {
  Socket socket;
  std::string peer;
  std::array<uint8_t, kHelloBytes> bytes{};  // what has come of the message awaited
  size_t got = 0;
  bool proving = false;
  Hello hello;  // once proving: the hello, and the nonce rank 0 answered it with
  Nonce nonce{};
};

// Rank 0's admission of the ranks: the connections being read, the ranks admitted, and what
// was turned away (for the message when ranks are missing).
class Doorkeeper {
 public:
  Doorkeeper(int world_size, const std::string& run_id, const RendezvousListener::Admitted& admitted)
      : world_(uint32_t(world_size)),
        run_id_(run_id),
        on_admitted_(admitted),
        admitted_(size_t(world_size), false) {
    admitted_[0] = true;
  }

  bool done() const { return std::count(admitted_.begin(), admitted_.end(), true) == long(admitted_.size()); }
  std::vector<Pending>& pending() { return pending_; }

  void accept(int listener) {
    for (;;) {
      sockaddr_storage a{};
      socklen_t length = sizeof a;
      const int fd =
          ::accept4(listener, reinterpret_cast<sockaddr*>(&a), &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        // Out of descriptors: the listener stays readable, so pause rather than spin on it.
        if (errno == EMFILE || errno == ENFILE) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        return;  // else none left (EAGAIN), or one that went away before it was taken
      }
      if (pending_.size() == kMaxPending) make_room();
      Pending p;
      p.socket = Socket(fd);
      p.peer = peer_name(a);
      pending_.push_back(std::move(p));
    }
  }

  // Reads what `p` has sent (never past the message awaited); true once `p` is finished with.
  bool read(Pending& p) {
    const size_t want = p.proving ? kProofBytes : kHelloBytes;
    const ssize_t n = ::recv(p.socket.fd(), p.bytes.data() + p.got, want - p.got, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
    if (n <= 0) {
      turned_away(p.peer, p.proving ? std::string("left when asked to prove the run id (another run id?)")
                                    : "closed the connection after " + std::to_string(p.got) +
                                          " bytes, without a hello");
      return true;
    }
    p.got += size_t(n);
    if (std::memcmp(p.bytes.data(), kRendezvousMagic, std::min(p.got, sizeof kRendezvousMagic)) != 0) {
      turned_away(p.peer, "sent \"" + quoted_bytes(p.bytes.data(), p.got, 16) + "\", not a " +
                              (p.proving ? "proof" : "hello"));
      return true;
    }
    if (p.got < want) return false;
    return p.proving ? judge_proof(p) : judge_hello(p);
  }

  std::string missing(const std::string& master, std::chrono::seconds timeout) const {
    std::vector<int> ranks;
    for (size_t r = 0; r < admitted_.size(); ++r)
      if (!admitted_[r]) ranks.push_back(int(r));
    std::string message = rank_list(ranks) + " did not join within " + std::to_string(timeout.count()) +
                          " s (" + std::to_string(world_) + " ranks expected at " + master + ")";
    for (size_t i = 0; i < away_.size(); ++i) message += (i ? "; " : "; turned away: ") + away_[i];
    if (turned_away_ > away_.size())
      message += "; and " + std::to_string(turned_away_ - away_.size()) + " more";
    return message;
  }

 private:
  // The oldest connection gives way to the newest, sparing those that have sent a hello and
  // are proving the run id where any other can go: a flood of silent connections cannot cut a
  // rank off in the middle of its proof.
  void make_room() {
    auto oldest = std::find_if(pending_.begin(), pending_.end(), [](const Pending& p) { return !p.proving; });
    if (oldest == pending_.end()) oldest = pending_.begin();
    turned_away(oldest->peer, oldest->proving ? "sent a hello but no proof before newer connections came"
                                              : "held a connection open without a hello");
    pending_.erase(oldest);
  }

  // What was turned away is listed up to kTurnedAwayListed, then counted: a flood costs no memory.
  void turned_away(const std::string& peer, const std::string& why) {
    if (away_.size() < kTurnedAwayListed) away_.push_back(peer + " " + why);
    ++turned_away_;
  }

  // A whole hello: turned away with the reason in the reply (true: finished with), or asked
  // to prove the run id, with rank 0's proof.
  bool judge_hello(Pending& p) {
    const Hello h = *decode_hello(p.bytes);
    Reply reply;
    if (h.version != kRendezvousVersion) {
      reply.verdict = Verdict::OtherVersion;
      turned_away(p.peer, "speaks rendezvous protocol " + std::to_string(h.version));
    } else if (h.rank == 0 || h.rank >= world_) {
      reply.verdict = Verdict::RankOutside;
      turned_away(p.peer, "claimed rank " + std::to_string(h.rank));
    } else if (admitted_[h.rank]) {
      reply.verdict = Verdict::RankTaken;
      turned_away(p.peer, "claimed rank " + std::to_string(h.rank) + ", which had joined");
    } else {
      p.hello = h;
      p.nonce = fresh_nonce();
      reply.verdict = Verdict::Prove;
      reply.nonce = p.nonce;
      reply.proof = rendezvous_proof(run_id_, true, h, p.nonce);
      send_now(p, encode_reply(reply));
      p.proving = true;
      p.got = 0;
      return false;
    }
    send_now(p, encode_reply(reply));
    return true;
  }

  // A whole proof: admitted, or turned away with the reason in the last verdict. A rank of this
  // run (its proof holds) started with another world size ends the rendezvous: the run cannot
  // start.
  bool judge_proof(Pending& p) {
    Sha256Digest proof;
    std::copy(p.bytes.begin() + kProofAt, p.bytes.begin() + kProofAt + proof.size(), proof.begin());
    const Hello& h = p.hello;
    uint32_t verdict = uint32_t(Verdict::Admitted), value = 0;
    if (!same_digest(proof, rendezvous_proof(run_id_, false, h, p.nonce))) {
      verdict = uint32_t(Verdict::OtherRunId);
      turned_away(p.peer, "gave another run id");
    } else if (h.world_size != world_) {
      send_now(p, encode_last_verdict(uint32_t(Verdict::OtherWorldSize), world_));
      throw Error("rank " + std::to_string(h.rank) + " was started with --world-size " +
                  std::to_string(h.world_size) + " and rank 0 with " + std::to_string(world_) +
                  ": every rank needs the same");
    } else if (admitted_[h.rank]) {
      verdict = uint32_t(Verdict::RankTaken);
      turned_away(p.peer, "claimed rank " + std::to_string(h.rank) + ", which had joined");
    }
    send_now(p, encode_last_verdict(verdict, value));
    if (verdict == uint32_t(Verdict::Admitted)) {
      admitted_[h.rank] = true;
      on_admitted_(int(h.rank), std::move(p.socket), p.peer);
    }
    return true;
  }

  static std::array<uint8_t, kVerdictBytes> encode_last_verdict(uint32_t verdict, uint32_t value) {
    std::array<uint8_t, kVerdictBytes> b{};
    std::memcpy(b.data(), kRendezvousMagic, sizeof kRendezvousMagic);
    put_u32(&b[kLastVerdictAt], verdict);
    put_u32(&b[kLastValueAt], value);
    return b;
  }

  // A message of rank 0 fits in an empty send buffer (the rank sends nothing more until it has
  // read it): written without waiting, or lost with its peer.
  template <size_t N>
  static void send_now(Pending& p, const std::array<uint8_t, N>& bytes) {
    [[maybe_unused]] const ssize_t sent =
        ::send(p.socket.fd(), bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }

  uint32_t world_;
  std::string run_id_;
  const RendezvousListener::Admitted& on_admitted_;
  std::vector<bool> admitted_;
  std::vector<Pending> pending_;
  std::vector<std::string> away_;
  size_t turned_away_ = 0;
};

}  // namespace

RendezvousListener::RendezvousListener(const std::string& master) : master_(master) {
  const std::string port = split(master).port;
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port) > 65535)
    throw Error("--master " + master + ": the port " + port + " is not a number from 1 to 65535");
  fd_ = bind_listener(master, uint16_t(std::stoi(port)));
  port_ = bound_port(fd_);
  if (std::stoi(port) == 0) master_ = master.substr(0, master.rfind(':') + 1) + std::to_string(port_);
}

RendezvousListener::~RendezvousListener() {
  if (fd_ >= 0) ::close(fd_);
}

void RendezvousListener::admit(int world_size, const std::string& run_id, std::chrono::seconds timeout,
                               const Admitted& admitted) {
  const Clock::time_point deadline = Clock::now() + timeout;
  Doorkeeper door(world_size, run_id, admitted);
  while (!door.done()) {
    std::vector<pollfd> fds{{fd_, POLLIN, 0}};
    for (const Pending& p : door.pending()) fds.push_back({p.socket.fd(), POLLIN, 0});
    const int wait = remaining_ms(deadline);
    if (wait == 0) throw Error(door.missing(master_, timeout));
    if (::poll(fds.data(), fds.size(), wait) < 0 && errno != EINTR)
      throw Error("--master " + master_ + ": rank 0 cannot wait for the ranks: " + std::strerror(errno));
    // The pending connections first: accepting may drop the oldest and shift the list.
    for (size_t i = fds.size() - 1; i >= 1; --i)
      if (fds[i].revents != 0 && door.read(door.pending()[i - 1]))
        door.pending().erase(door.pending().begin() + long(i - 1));
    if (fds[0].revents & POLLIN) door.accept(fd_);
  }
}

// ---- the other ranks ----

namespace {

std::string cannot_reach(const std::string& master, std::chrono::seconds timeout,
                         const std::string& last_error) {
  return "--master " + master + ": cannot reach rank 0 there within " + std::to_string(timeout.count()) +
         " s (is rank 0 started, and the port open?)" + (last_error.empty() ? "" : ": " + last_error);
}

// One connection attempt to `a`, given up at `deadline`; errno-like reason in `error`.
Socket try_connect(const addrinfo& a, Clock::time_point deadline, int& error) {
  Socket s(::socket(a.ai_family, a.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a.ai_protocol));
  if (s.fd() < 0) {
    error = errno;
    return Socket();
  }
  if (::connect(s.fd(), a.ai_addr, a.ai_addrlen) == 0) return s;
  if (errno != EINPROGRESS) {
    error = errno;
    return Socket();
  }
  if (!ready(s.fd(), POLLOUT, deadline)) {
    error = ETIMEDOUT;
    return Socket();
  }
  socklen_t length = sizeof error;
  if (::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &error, &length) != 0) error = errno;
  return error == 0 ? std::move(s) : Socket();
}

// Connects to rank 0, trying again while nothing listens there (it may start later).
Socket connect_before(const std::string& master, Clock::time_point deadline, std::chrono::seconds timeout) {
  const HostPort hp = split(master);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int r = ::getaddrinfo(hp.host.c_str(), hp.port.c_str(), &hints, &found); r != 0)
    throw Error("--master " + master + ": cannot resolve " + hp.host + ": " + ::gai_strerror(r));
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> addresses(found, ::freeaddrinfo);
  int error = 0;
  for (;;) {
    for (const addrinfo* a = found; a; a = a->ai_next)
      if (Socket s = try_connect(*a, deadline, error); s.fd() >= 0) return s;
    if (remaining_ms(deadline) == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(200, remaining_ms(deadline))));
  }
  const bool expected = error == ECONNREFUSED || error == ETIMEDOUT || error == 0;
  throw Error(cannot_reach(master, timeout, expected ? "" : std::strerror(error)));
}

// What came back for a message: up to N bytes, and why the reading stopped short.
template <size_t N>
struct Answer {
  std::array<uint8_t, N> bytes{};
  size_t got = 0;
  bool closed = false;   // end of stream, or the connection reset
  bool foreign = false;  // the first bytes are not the magic: no need to wait for more
};

template <size_t N>
Answer<N> read_answer(int fd, Clock::time_point deadline) {
  Answer<N> a;
  while (a.got < N && !a.foreign && ready(fd, POLLIN, deadline)) {
    const ssize_t n = ::recv(fd, a.bytes.data() + a.got, N - a.got, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) {
      a.closed = true;
      break;
    }
    a.got += size_t(n);
    a.foreign = std::memcmp(a.bytes.data(), kRendezvousMagic, std::min(a.got, sizeof kRendezvousMagic)) != 0;
  }
  return a;
}

// Throws the one line for an answer that is not rank 0's, or did not all come.
template <size_t N>
void expect_whole(const std::string& master, const Answer<N>& a, std::chrono::seconds timeout) {
  const std::string at = "--master " + master + ": ";
  if (a.foreign)
    throw Error(at + "what answers there is not a Translution rank 0 (it sent \"" +
                quoted_bytes(a.bytes.data(), a.got, 16) + "\")");
  if (a.got < N && a.closed)
    throw Error(at + "the process there closed the connection " +
                (a.got ? "after " + std::to_string(a.got) + " bytes of an answer"
                       : std::string("without an answer")) +
                " (not a Translution rank 0, or one that refused this rank)");
  if (a.got < N)
    throw Error(at + "the process there accepted the connection but gave no rendezvous answer within " +
                std::to_string(timeout.count()) + " s (not a Translution rank 0, or a stopped one)");
}

// The one line for what rank 0 refused, in its reply or its last verdict.
[[noreturn]] void refused(const std::string& master, const Hello& hello, uint32_t verdict, uint32_t value,
                          const uint8_t* bytes, size_t size) {
  const std::string at = "--master " + master + ": ";
  switch (Verdict(verdict)) {
    case Verdict::OtherRunId:
      throw Error(at +
                  "rank 0 there runs with another run id: give every rank the same --run-id (or "
                  "TRANSLUTION_RUN_ID)");
    case Verdict::OtherWorldSize:
      throw Error("rank 0 was started with --world-size " + std::to_string(value) + " and rank " +
                  std::to_string(hello.rank) + " with " + std::to_string(hello.world_size) +
                  ": every rank needs the same");
    case Verdict::RankTaken:
      throw Error("another process already joined this run as rank " + std::to_string(hello.rank) +
                  " (--rank must differ on every process)");
    case Verdict::RankOutside:
      throw Error(at + "rank 0 there does not take rank " + std::to_string(hello.rank) +
                  " (--rank must be from 1 to --world-size - 1 on the other processes)");
    default: break;
  }
  throw Error(at + "rank 0 there answered \"" + quoted_bytes(bytes, size, size) +
              "\", which this release does not understand");
}

// Rank 0's proof from a whole reply of this version that asks for the rank's; else the one line
// for what rank 0 refused.
void expect_challenge(const std::string& master, const Hello& hello, const std::string& run_id,
                      const Answer<kReplyBytes>& a, Nonce& rank_zero_nonce) {
  const uint32_t version = get_u32(&a.bytes[kVersionAt]), verdict = get_u32(&a.bytes[kVerdictAt]);
  if (version != hello.version)
    throw Error("--master " + master + ": rank 0 there speaks rendezvous protocol " +
                std::to_string(version) + " and this rank " + std::to_string(hello.version) +
                ": run the same Translution release on every machine");
  if (Verdict(verdict) != Verdict::Prove)
    refused(master, hello, verdict, get_u32(&a.bytes[kValueAt]), a.bytes.data(), a.got);
  std::copy(a.bytes.begin() + kReplyNonceAt, a.bytes.begin() + kReplyNonceAt + 16, rank_zero_nonce.begin());
  Sha256Digest proof;
  std::copy(a.bytes.begin() + kReplyProofAt, a.bytes.begin() + kReplyProofAt + 32, proof.begin());
  // Not rank 0 of this run id (another run, or a process that replays what it saw): this rank
  // proves nothing to it.
  if (!same_digest(proof, rendezvous_proof(run_id, true, hello, rank_zero_nonce)))
    refused(master, hello, uint32_t(Verdict::OtherRunId), 0, a.bytes.data(), a.got);
}

// Sends a message of this rank's that fits in the connection's empty send buffer.
template <size_t N>
void send_now(const std::string& master, int fd, const std::array<uint8_t, N>& bytes) {
  if (::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT) != ssize_t(bytes.size()))
    throw Error("--master " + master +
                ": the process there closed the connection in the middle of the rendezvous (not a "
                "Translution rank 0?): " +
                std::strerror(errno));
}

}  // namespace

Socket introduce(const std::string& master, Hello hello, const std::string& run_id,
                 std::chrono::seconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  Socket s = connect_before(master, deadline, timeout);
  hello.nonce = fresh_nonce();
  send_now(master, s.fd(), encode_hello(hello));
  const Answer<kReplyBytes> reply = read_answer<kReplyBytes>(s.fd(), deadline);
  expect_whole(master, reply, timeout);
  Nonce rank_zero_nonce{};
  expect_challenge(master, hello, run_id, reply, rank_zero_nonce);
  std::array<uint8_t, kProofBytes> proof{};
  std::memcpy(proof.data(), kRendezvousMagic, sizeof kRendezvousMagic);
  const Sha256Digest mine = rendezvous_proof(run_id, false, hello, rank_zero_nonce);
  std::copy(mine.begin(), mine.end(), proof.begin() + kProofAt);
  send_now(master, s.fd(), proof);
  const Answer<kVerdictBytes> last = read_answer<kVerdictBytes>(s.fd(), deadline);
  expect_whole(master, last, timeout);
  const uint32_t verdict = get_u32(&last.bytes[kLastVerdictAt]);
  if (Verdict(verdict) != Verdict::Admitted)
    refused(master, hello, verdict, get_u32(&last.bytes[kLastValueAt]), last.bytes.data(), last.got);
  return s;
}

}  // namespace translution
