#pragma once
// A group of training processes that meet through PyTorch's c10d: a store where
// they find each other (c10d's FileStore for one machine; for several, a store rank 0
// serves) and a backend for the collectives (Gloo on CPU, NCCL on CUDA).
//
// Across machines, rank 0 listens at the master's address and admits each rank through a
// handshake of fixed sizes and a deadline (dist/rendezvous_handshake.h); it then serves its
// store on the admitted connections alone (dist/store_server.h), so nothing that was not
// admitted can read or write the run's keys, and no length from the wire is trusted.
//
// join() is a handshake before any collective: each rank announces its world size
// and a fingerprint of its configuration, and a mismatch (another world size,
// another config, two processes claiming one rank) is an Error naming both sides,
// not a hang. Every collective is counted: a rank records in the store how many it
// has reached before entering one, and raises a heartbeat every second, so when a
// collective fails (a peer died, or hung past the timeout) the survivors can name the
// ranks whose heartbeat stopped, or that fell behind.
//
// Only core/dist/process_group.cpp includes c10d. A build without it (no libgloo-dev
// for Debian's LibTorch) still has this class: available() says so and join()
// throws an Error naming what is missing.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "util/error.h"

namespace translution {

// The most ranks a run may have: far beyond any run of this engine, and a bound on what
// the handshake and the store hold for each rank.
constexpr int kMaxRanks = 65536;

// The shortest run id taken across machines (GroupOptions::run_id).
constexpr size_t kMinRunIdChars = 16;

struct GroupOptions {
  int rank = 0;
  int world_size = 1;
  // "HOST:PORT": rank 0 admits the ranks on PORT and serves its store there; "file:PATH": a FileStore on a
  // filesystem every rank sees (one machine: `train --nproc` uses a temporary one).
  std::string master;
  std::string backend = "auto";  // auto | gloo | nccl (auto: NCCL for CUDA tensors where built, else Gloo)
  // A run across machines (master HOST:PORT): a text every rank is given, of at least
  // kMinRunIdChars. Rank 0 admits only the ranks that prove they know it
  // (dist/rendezvous_handshake.h); required there, since a default every build knows would let
  // any process join. A FileStore, or a world of one rank, needs none.
  std::string run_id;
  std::chrono::seconds timeout{300};  // joining, and each collective
  std::string interface;              // Gloo's network interface (multi-machine); empty: by master's address
  bool local = false;                 // every rank on this machine (`train --nproc`): Gloo over loopback
  bool cuda = false;                  // the tensors live on the GPU
  int cuda_device = 0;                // which one (NCCL stages CPU tensors there)

  void validate() const;  // throws Error naming the value
};

// A collective that did not complete: a peer died, hung past the timeout, or left.
class PeerFailure : public Error {
 public:
  PeerFailure(const std::string& message, std::vector<int> ranks)
      : Error(message), ranks_(std::move(ranks)) {}
  // The ranks that fell behind (empty where the store could not say).
  const std::vector<int>& ranks() const { return ranks_; }

 private:
  std::vector<int> ranks_;
};

class ProcessGroup {
 public:
  // Whether this build has c10d, and which backends.
  static bool available();
  static std::string backends();        // e.g. "gloo" or "gloo, nccl"
  static std::string missing_reason();  // what to install where !available()

  // The backend `options` get (auto resolved); throws an Error where this build or the
  // device cannot run it.
  static std::string backend_for(const GroupOptions& options);

  // Joins the group: rendezvous handshake (across machines), store, handshake (world size
  // and `fingerprint`, a text that must be equal on every rank; a line-by-line difference
  // is reported), backend. Throws Error with one line on a port in use, an unreachable
  // master, something else than rank 0 at the master's address, another run id, a
  // mismatch, a timeout.
  static std::unique_ptr<ProcessGroup> join(const GroupOptions& options, const std::string& fingerprint);
  ~ProcessGroup();

  int rank() const { return options_.rank; }
  int world_size() const { return options_.world_size; }
  const GroupOptions& options() const { return options_; }
  std::string backend() const;

  // Sums each tensor over the ranks in place (each its own collective, all started
  // before the first is waited for). Contiguous tensors of one device.
  void all_reduce_sum(std::vector<at::Tensor>& tensors);
  // Rank 0's tensor into every rank's (same shape and dtype everywhere).
  void broadcast(at::Tensor& tensor);

 private:
  struct State;
  ProcessGroup(const GroupOptions& options, std::unique_ptr<State> state);
  void reach_collective();
  std::vector<int> silent_ranks();
  [[noreturn]] void fail(const std::string& what);

  GroupOptions options_;
  std::unique_ptr<State> state_;
  int64_t collectives_ = 0;
};

// The first line where two fingerprints differ, as "A against B" (empty when equal).
std::string first_difference(const std::string& mine, const std::string& theirs);

}  // namespace translution
