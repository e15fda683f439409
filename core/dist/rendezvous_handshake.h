#pragma once
// The handshake that admits a rank to a run across machines (`train --master HOST:PORT`)
// before any store is touched.
//
// Whatever answers at the master's address may be something else than rank 0 (a web server,
// a stale service), and whatever connects to it something else than a rank. So rank 0 listens
// on HOST:PORT itself, and every other rank first sends it a hello of a fixed size; rank 0
// answers with a reply of a fixed size. The connection of a rank of this run
// stays open: rank 0 serves its store there (dist/store_server.h), and nowhere else.
//
// On the wire (integers big-endian; every version keeps the magic and the version first, so
// that two versions can tell each other apart):
//   hello (rank r -> rank 0), kHelloBytes: magic, version, rank, world size, the run id's
//     digest (32 hex digits), zeros.
//   reply (rank 0 -> rank r), kReplyBytes: magic, version, verdict, value (OtherWorldSize:
//     rank 0's world size; otherwise 0), zeros.
// Each side reads exactly those many bytes before a deadline; nothing read sets a length.
//
// The run id is a text every rank of the run is given (--run-id, TRANSLUTION_RUN_ID): rank 0
// turns away a hello with another one, so a process that does not know it cannot join.
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dist/socket.h"

namespace translution {

constexpr uint32_t kRendezvousVersion = 2;  // ranks of other versions refuse each other
constexpr size_t kHelloBytes = 64;
constexpr size_t kReplyBytes = 24;
constexpr char kRendezvousMagic[8] = {'T', 'R', 'N', 'S', 'L', 'R', 'D', 'V'};

// What rank 0 answers a hello.
enum class Verdict : uint32_t {
  Admitted = 0,
  OtherRunId = 1,      // the hello's run id differs from rank 0's
  OtherVersion = 2,    // the hello's protocol version differs (the reply carries rank 0's)
  OtherWorldSize = 3,  // the value is rank 0's world size
  RankTaken = 4,       // another process was admitted as that rank
  RankOutside = 5,     // rank 0 itself, or not below the world size
};

struct Hello {
  uint32_t version = kRendezvousVersion;
  uint32_t rank = 0;
  uint32_t world_size = 1;
  std::string run_digest;  // run_digest(run id): 32 hex digits
};

struct Reply {
  uint32_t version = kRendezvousVersion;
  Verdict verdict = Verdict::Admitted;
  uint32_t value = 0;
};

std::string run_digest(const std::string& run_id);

std::array<uint8_t, kHelloBytes> encode_hello(const Hello& hello);
// nullopt where the bytes do not begin with the magic. The fields after the version are
// read as this version lays them out; the caller checks the version first.
std::optional<Hello> decode_hello(const std::array<uint8_t, kHelloBytes>& bytes);
std::array<uint8_t, kReplyBytes> encode_reply(const Reply& reply);

// Rank 0's side. Listens on the port of `master` ("HOST:PORT"), on every interface as
// c10d's store does; throws Error with one line where the port is in use or cannot be bound.
class RendezvousListener {
 public:
  explicit RendezvousListener(const std::string& master);
  ~RendezvousListener();
  RendezvousListener(const RendezvousListener&) = delete;
  RendezvousListener& operator=(const RendezvousListener&) = delete;

  uint16_t port() const { return port_; }  // the one bound (PORT, or a free one for PORT 0)

  // A rank admitted: its number, its connection (non-blocking, the reply sent), its address.
  using Admitted = std::function<void(int rank, Socket connection, const std::string& peer)>;

  // Admits ranks 1..world_size-1, handing each connection to `admitted` as it is; returns once
  // every rank was. Connections are read side by side, so a silent or slow one holds up no
  // other; what is not a hello of this run is turned away and remembered. Throws Error with
  // one line: a rank of this run (its run id) with another world size; ranks missing after
  // `timeout` (naming them, the address, and what was turned away).
  void admit(int world_size, const std::string& run_id, std::chrono::seconds timeout,
             const Admitted& admitted);

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
  std::string master_;
};

// Another rank's side: sends `hello` to rank 0 at `master` and returns the connection, on
// which rank 0 serves its store once it has admitted the rank. Retries while nothing listens there, until
// `timeout`; then throws Error with one line naming `master` and what answered: nothing, a process that
// stayed silent or closed, bytes that are not a reply (quoted), another protocol version, a refusal (another
// run id or world size, a rank taken).
Socket introduce(const std::string& master, const Hello& hello, std::chrono::seconds timeout);

// `bytes` as a reader sees them: printable ASCII as is, anything else as \xNN, at most `limit`
// bytes (then "...").
std::string quoted_bytes(const uint8_t* bytes, size_t size, size_t limit);

}  // namespace translution
