#pragma once
// The handshake that admits a rank to a run across machines (`train --master HOST:PORT`)
// before any store is touched.
//
// Whatever answers at the master's address may be something else than rank 0 (a web server,
// a stale service), and whatever connects to it something else than a rank. So rank 0 listens
// on HOST:PORT itself, every message has a fixed size, and each side reads exactly that many
// bytes before a deadline; nothing read sets a length. The connection of a rank admitted stays
// open: rank 0 serves its store there (dist/store_server.h), and nowhere else.
//
// The run id is a text every rank of the run is given (--run-id, TRANSLUTION_RUN_ID), and
// never sent: each side proves it knows the id with an HMAC-SHA-256 keyed by it over both
// sides' fresh random nonces, so a proof seen once (a process squatting on the port, a
// listener on the network) admits no one later, and a rank learns that rank 0 is the run's
// before it trusts a byte of its store.
//
// On the wire (integers big-endian; every message begins with the magic, and the first two
// with the version, so that two versions can tell each other apart):
//   hello (rank r -> rank 0), kHelloBytes: magic, version, rank, world size, r's nonce, zeros.
//   reply (rank 0 -> rank r), kReplyBytes: magic, version, verdict, value (OtherWorldSize:
//     rank 0's world size; otherwise 0), and for Prove: rank 0's nonce and its proof; zeros.
//   proof (rank r -> rank 0, after Prove), kProofBytes: magic, r's proof.
//   verdict (rank 0 -> rank r, last), kVerdictBytes: magic, verdict (Admitted, OtherRunId or
//     RankTaken), zeros.
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dist/socket.h"
#include "util/sha256.h"

namespace translution {

constexpr uint32_t kRendezvousVersion = 3;  // ranks of other versions refuse each other
constexpr size_t kHelloBytes = 64;
constexpr size_t kReplyBytes = 72;
constexpr size_t kProofBytes = 40;
constexpr size_t kVerdictBytes = 16;
constexpr char kRendezvousMagic[8] = {'T', 'R', 'N', 'S', 'L', 'R', 'D', 'V'};

using Nonce = std::array<uint8_t, 16>;

// What rank 0 answers a hello, then a proof.
enum class Verdict : uint32_t {
  Admitted = 0,
  OtherRunId = 1,      // the rank's proof is not of rank 0's run id
  OtherVersion = 2,    // the hello's protocol version differs (the reply carries rank 0's)
  OtherWorldSize = 3,  // the value is rank 0's world size
  RankTaken = 4,       // another process was admitted as that rank
  RankOutside = 5,     // rank 0 itself, or not below the world size
  Prove = 6,           // the reply carries rank 0's nonce and proof: the rank's proof is due
};

struct Hello {
  uint32_t version = kRendezvousVersion;
  uint32_t rank = 0;
  uint32_t world_size = 1;
  Nonce nonce{};
};

struct Reply {
  uint32_t version = kRendezvousVersion;
  Verdict verdict = Verdict::Admitted;
  uint32_t value = 0;
  Nonce nonce{};         // Prove: rank 0's
  Sha256Digest proof{};  // Prove: rank 0's
};

// 16 bytes from the system's random source.
Nonce fresh_nonce();

// What a side proves, rank 0 (`by_rank_zero`) or the rank of `hello`: HMAC-SHA-256 keyed by the
// run id over the side's name, both nonces, and the rank and world size the hello named. The
// names differ, so that neither side's proof serves as the other's.
Sha256Digest rendezvous_proof(const std::string& run_id, bool by_rank_zero, const Hello& hello,
                              const Nonce& rank_zero_nonce);

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

// Another rank's side: sends `hello` (its nonce drawn here) to rank 0 at `master`, proves `run_id`
// and checks rank 0's proof, and returns the connection, on which rank 0 serves its store once
// it has admitted the rank. Retries while nothing listens there, until
// `timeout`; then throws Error with one line naming `master` and what answered: nothing, a process that
// stayed silent or closed, bytes that are not a reply (quoted), another protocol version, a refusal (another
// run id or world size, a rank taken).
Socket introduce(const std::string& master, Hello hello, const std::string& run_id,
                 std::chrono::seconds timeout);

// `bytes` as a reader sees them: printable ASCII as is, anything else as \xNN, at most `limit`
// bytes (then "...").
std::string quoted_bytes(const uint8_t* bytes, size_t size, size_t limit);

}  // namespace translution
