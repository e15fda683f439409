// Data-parallel training's parts: bucket plans, batch shares, fingerprints, and two
// ranks in one process (threads over a FileStore) summing gradients, handing over
// bytes and refusing mismatched partners; the rendezvous handshake across machines against
// rank 0, other ranks and what is neither (junk, HTTP, silence, a length bomb).
// Multi-process runs are tests/e2e/distributed_test.sh and tests/e2e/rendezvous_test.sh.
#include "dist/data_parallel.h"

#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iterator>
#include <map>
#include <thread>
#include <tuple>

#include <ATen/ATen.h>
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dist/process_group.h"
#include "dist/rendezvous_handshake.h"
#include "dist/socket.h"
#include "dist/store_file.h"
#include "temp_dir.h"

namespace translution {
namespace {

// The in-process ranks reduce CPU tensors: Gloo's work (a CUDA build may have NCCL alone).
bool has_gloo() { return ProcessGroup::backends().find("gloo") != std::string::npos; }

TEST(DataParallel, BucketsKeepOrderAndSize) {
  const std::vector<at::Tensor> p = {at::zeros({10}), at::zeros({10}), at::zeros({30}),
                                     at::zeros({5}, at::kDouble), at::zeros({5}, at::kDouble)};
  // 80 bytes a bucket: 40 + 40 fit, 120 alone (larger than a bucket), then the doubles apart.
  const auto buckets = plan_buckets(p, 80);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0], (std::vector<size_t>{0, 1}));
  EXPECT_EQ(buckets[1], (std::vector<size_t>{2}));
  EXPECT_EQ(buckets[2], (std::vector<size_t>{3, 4}));
}

TEST(DataParallel, SharesCoverTheBatchOnce) {
  for (int world : {1, 2, 3, 5}) {
    for (int64_t batch : {1, 2, 7, 32, 33}) {
      int64_t next = 0;
      for (int r = 0; r < world; ++r) {
        const auto [begin, end] = batch_share(batch, r, world);
        EXPECT_EQ(begin, next);
        EXPECT_LE(end - begin, batch / world + 1);
        EXPECT_GE(end - begin, batch / world);
        next = end;
      }
      EXPECT_EQ(next, batch);
    }
  }
}

TEST(DataParallel, FingerprintsNameTheFirstDifference) {
  EXPECT_EQ(first_difference("a=1\nb=2\n", "a=1\nb=2\n"), "");
  EXPECT_EQ(first_difference("a=1\nb=2\n", "a=1\nb=3\n"), "b=2 against b=3");
  EXPECT_EQ(first_difference("a=1\n", "a=1\nc=4\n"), "(nothing) against c=4");
}

TEST(DataParallel, OptionsAreCheckedWithOneLine) {
  GroupOptions o;
  o.world_size = 2;
  o.rank = 2;
  o.master = "host:1";
  EXPECT_THROW(o.validate(), Error);
  o.rank = 1;
  o.master = "host";
  EXPECT_THROW(o.validate(), Error);
  o.master = "host:70000";
  EXPECT_THROW(o.validate(), Error);
  o.master = "file:";
  EXPECT_THROW(o.validate(), Error);
  o.master = "10.0.0.1:29500";
  EXPECT_THROW(o.validate(), Error);  // across machines a run id is required
  o.run_id = "a secret";
  EXPECT_THROW(o.validate(), Error);  // one that is easily guessed
  o.run_id = "a secret of more words";
  EXPECT_NO_THROW(o.validate());
  o.master = "file:/shared/run";
  o.run_id = "";
  EXPECT_NO_THROW(o.validate());  // a FileStore needs none
  o.master = "10.0.0.1:29500";
  o.world_size = 1;
  o.rank = 0;
  EXPECT_NO_THROW(o.validate());  // nor a world of one rank
  o.backend = "mpi";
  EXPECT_THROW(o.validate(), Error);
}

// Runs `body(rank)` for two ranks on two threads over one FileStore; returns what each threw ("" if nothing).
std::vector<std::string> two_ranks(const std::function<void(int, const std::string&)>& body) {
  test_support::TempDir dir;
  const std::string master = "file:" + dir.file("store");
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      try {
        body(r, master);
      } catch (const std::exception& e) {
        errors[size_t(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

GroupOptions options(int rank, const std::string& master, int world = 2) {
  GroupOptions o;
  o.rank = rank;
  o.world_size = world;
  o.master = master;
  o.timeout = std::chrono::seconds(20);
  return o;
}

TEST(DataParallel, TwoRanksSumWeightedGradients) {
  if (!has_gloo()) GTEST_SKIP() << "this build has no Gloo backend";
  std::vector<at::Tensor> results(2);
  const auto errors = two_ranks([&](int rank, const std::string& master) {
    DataParallel parallel(ProcessGroup::join(options(rank, master), "same"), /*bucket_bytes=*/16);
    // Rank 0 has gradients 1..6, rank 1 has 10..60 in one parameter and none in the other.
    at::Tensor a = at::zeros({2, 3}).requires_grad_(), b = at::zeros({4}, at::kDouble).requires_grad_();
    a.mutable_grad() = at::arange(1, 7, at::kFloat).reshape({2, 3}) * (rank == 0 ? 1 : 10);
    if (rank == 0) b.mutable_grad() = at::ones({4}, at::kDouble);
    // Shares of 3 and 1 images of a batch of 4.
    at::Tensor unused = at::zeros({2}).requires_grad_();  // no gradient on any rank
    parallel.average_gradients({a, b, unused}, rank == 0 ? 0.75 : 0.25);
    EXPECT_FALSE(unused.grad().defined());
    results[size_t(rank)] = at::cat({a.grad().reshape({-1}).to(at::kDouble), b.grad()});
    const auto totals = parallel.sum({rank == 0 ? 3.0 : 1.0, 2, 3});
    EXPECT_DOUBLE_EQ(totals.loss_sum, 4.0);
    EXPECT_DOUBLE_EQ(totals.images, 6.0);
    EXPECT_TRUE(parallel.any(rank == 1));
    EXPECT_FALSE(parallel.any(false));
    EXPECT_EQ(parallel.broadcast_bytes(rank == 0 ? std::string("from rank 0\0!", 13) : "ignored"),
              std::string("from rank 0\0!", 13));
  });
  ASSERT_EQ(errors, (std::vector<std::string>{"", ""}));
  const at::Tensor expected =
      at::cat({at::arange(1, 7, at::kDouble) * (0.75 + 2.5), at::full({4}, 0.75, at::kDouble)});
  EXPECT_TRUE(at::allclose(results[0], expected, 1e-6, 1e-6)) << results[0];
  EXPECT_TRUE(at::equal(results[0], results[1]));  // the same bits on every rank
}

// Rank 0's word on how much it sends is checked before any rank allocates it.
TEST(DataParallel, ABroadcastLargerThanTheMemoryIsRefusedBeforeItIsAllocated) {
  if (!has_gloo()) GTEST_SKIP() << "this build has no Gloo backend";
  ::setenv("TRANSLUTION_AVAILABLE_MEMORY", "1000", 1);
  const auto errors = two_ranks([&](int rank, const std::string& master) {
    DataParallel parallel(ProcessGroup::join(options(rank, master), "same"));
    parallel.broadcast_bytes(rank == 0 ? std::string(2000, 'x') : "");
  });
  ::unsetenv("TRANSLUTION_AVAILABLE_MEMORY");
  // Every rank checks, rank 0 too (it copies what it sends): with one figure for all, the ranks
  // agree, and none waits.
  for (const std::string& e : errors)
    EXPECT_EQ(
        e,
        "rank 0 announced 2000 bytes to send, and 1000 bytes are available (TRANSLUTION_AVAILABLE_MEMORY)");
}

TEST(DataParallel, RankZeroWeightsWinAndDifferencesAreNamed) {
  if (!has_gloo()) GTEST_SKIP() << "this build has no Gloo backend";
  std::vector<at::Tensor> weights(2);
  const auto errors = two_ranks([&](int rank, const std::string& master) {
    DataParallel parallel(ProcessGroup::join(options(rank, master), "same"));
    weights[size_t(rank)] = at::full({3}, rank == 0 ? 1.0f : 2.0f);
    parallel.start_from_rank0({weights[size_t(rank)]});
  });
  EXPECT_TRUE(at::equal(weights[1], at::full({3}, 1.0f)));
  for (const std::string& e : errors)
    EXPECT_NE(e.find("rank 1 built other initial weights"), std::string::npos) << e;
}

TEST(DataParallel, MismatchedConfigsAreRefusedOnBothSides) {
  if (!has_gloo()) GTEST_SKIP() << "this build has no Gloo backend";
  const auto errors = two_ranks([&](int rank, const std::string& master) {
    ProcessGroup::join(options(rank, master), rank == 0 ? "depth=1\n" : "depth=2\n");
  });
  EXPECT_EQ(errors[0], "rank 0's training configuration differs from rank 1's: depth=1 against depth=2");
  EXPECT_EQ(errors[1], "rank 1's training configuration differs from rank 0's: depth=2 against depth=1");
}

TEST(DataParallel, AMissingRankIsNamedAfterTheTimeout) {
  if (!has_gloo()) GTEST_SKIP() << "this build has no Gloo backend";
  test_support::TempDir dir;
  GroupOptions o = options(0, "file:" + dir.file("store"), 3);
  o.timeout = std::chrono::seconds(1);
  try {
    ProcessGroup::join(o, "x");
    FAIL() << "joined without ranks 1 and 2";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ranks 1, 2 did not join within 1 s"), std::string::npos)
        << e.what();
  }
  // No other rank ever claimed a place in it: the rendezvous file does not stay behind.
  EXPECT_FALSE(std::filesystem::exists(dir.file("store")));
}

// A second process started as rank 0 of a run that already has one is refused, and leaves the
// run's rendezvous file to the rank 0 still waiting in it.
TEST(DataParallel, ASecondRankZeroLeavesTheRunItsRendezvousFile) {
  if (!has_gloo()) GTEST_SKIP() << "this build has no Gloo backend";
  test_support::TempDir dir;
  GroupOptions o = options(0, "file:" + dir.file("store"), 2);
  o.timeout = std::chrono::seconds(4);
  auto first = std::async(std::launch::async, [&] {
    try {
      ProcessGroup::join(o, "x");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("joined");
  });
  for (int i = 0; i < 200 && !(std::filesystem::exists(dir.file("store")) &&
                               std::filesystem::file_size(dir.file("store")) > 0);
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  GroupOptions second = o;
  second.timeout = std::chrono::seconds(1);
  try {
    ProcessGroup::join(second, "x");
    ADD_FAILURE() << "a second rank 0 joined";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another process already joined this run as rank 0"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(std::filesystem::exists(dir.file("store")));  // the first still waits in it
  EXPECT_NE(first.get().find("rank 1 did not join within 4 s"), std::string::npos);
}

// What c10d's FileStore writes passes the check (read while rank 0 waits for its peer); junk,
// or a record cut short, is refused before the store would take its bytes for a length.
TEST(DataParallel, ARendezvousFileIsCheckedBeforeTheStoreOpensIt) {
  if (!has_gloo()) GTEST_SKIP() << "this build has no Gloo backend";
  test_support::TempDir dir;
  const std::string path = dir.file("store");
  GroupOptions o = options(0, "file:" + path, 2);
  o.timeout = std::chrono::seconds(2);
  auto waiting = std::async(std::launch::async, [&] { EXPECT_THROW(ProcessGroup::join(o, "x"), Error); });
  bool checked = false;
  for (int i = 0; i < 150 && !checked; ++i) {
    std::error_code ec;
    if (std::filesystem::file_size(path, ec) > 0 && !ec) {
      EXPECT_NO_THROW(check_store_file(path));
      checked = true;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  waiting.get();
  EXPECT_TRUE(checked) << "rank 0 wrote nothing to its rendezvous file";
  const uint32_t length = 100;
  std::string cut(reinterpret_cast<const char*>(&length), sizeof length);
  for (const std::string& bytes : {std::string("junk"), cut + "abc"}) {
    std::ofstream(path, std::ios::binary) << bytes;
    try {
      ProcessGroup::join(o, "x");
      ADD_FAILURE() << "joined through a file that is not c10d's";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path + " is not a rendezvous file"), std::string::npos)
          << e.what();
    }
    std::ifstream in(path, std::ios::binary);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), bytes) << "the file was changed";
  }
}

// ---- the rendezvous handshake across machines (dist/rendezvous_handshake.h) ----

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A rank's hello, with the run id it proves.
struct Knock {
  Hello hello;
  std::string run_id;
};

Knock hello_of(int rank, int world, const std::string& run_id) {
  Knock k;
  k.hello.rank = uint32_t(rank);
  k.hello.world_size = uint32_t(world);
  k.run_id = run_id;
  return k;
}

Socket knock(const std::string& master, const Knock& k, int timeout_seconds) {
  return introduce(master, k.hello, k.run_id, std::chrono::seconds(timeout_seconds));
}

// A process at the master's address that is not rank 0: it accepts one connection on a free
// port of 127.0.0.1, sends `answer` (if any), then closes it or holds it open until destroyed.
class Impostor {
 public:
  Impostor(std::string answer, bool close_after) : answer_(std::move(answer)), close_after_(close_after) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t length = sizeof a;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), length) != 0 || ::listen(fd_, 4) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &length) != 0)
      throw std::runtime_error("the test cannot listen on 127.0.0.1");
    master_ = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
    thread_ = std::thread([this] { serve(); });
  }
  ~Impostor() {
    ::shutdown(fd_, SHUT_RDWR);  // wakes accept()
    released_.set_value();
    thread_.join();
    ::close(fd_);
  }
  const std::string& master() const { return master_; }

 private:
  void serve() {
    const int c = ::accept(fd_, nullptr, nullptr);
    if (c < 0) return;
    [[maybe_unused]] const ssize_t sent = ::send(c, answer_.data(), answer_.size(), MSG_NOSIGNAL);
    if (!close_after_) released_.get_future().wait();
    ::close(c);
  }

  std::string answer_;
  bool close_after_;
  int fd_ = -1;
  std::string master_;
  std::promise<void> released_;
  std::thread thread_;
};

// What introduce() threw at `master` (failing the test where it returned), and within what time.
std::string refusal(const std::string& master, const Knock& hello, int timeout_seconds,
                    double* seconds = nullptr) {
  const Clock::time_point start = Clock::now();
  try {
    const Socket connection = knock(master, hello, timeout_seconds);
    ADD_FAILURE() << "admitted by " << master;
  } catch (const Error& e) {
    if (seconds) *seconds = seconds_since(start);
    return e.what();
  }
  return {};
}

// The checks every refusal of a non-peer meets: one line, naming the address, within the deadline.
void expect_one_line_refusal(const std::string& answer, bool close_after, const std::string& expected) {
  const Impostor impostor(answer, close_after);
  double seconds = 0;
  const std::string e = refusal(impostor.master(), hello_of(1, 2, "secret"), 2, &seconds);
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  EXPECT_EQ(e.rfind("--master " + impostor.master() + ": ", 0), 0u) << e;
  EXPECT_NE(e.find(expected), std::string::npos) << e;
  EXPECT_LE(seconds, 2 + 2.0) << e;
}

std::string text_of(const std::array<uint8_t, kReplyBytes>& bytes) { return {bytes.begin(), bytes.end()}; }

// The ranks rank 0 admits, in the order it admits them (their connections closed).
RendezvousListener::Admitted note_ranks(std::vector<int>& ranks) {
  return [&ranks](int rank, Socket, const std::string&) { ranks.push_back(rank); };
}

TEST(DataParallelRendezvous, APeerOfTheRunIsAdmittedOnItsOwnConnection) {
  RendezvousListener listener("127.0.0.1:0");
  ASSERT_GT(listener.port(), 0);
  const std::string master = "127.0.0.1:" + std::to_string(listener.port());
  std::promise<void> written;
  auto peers = std::async(std::launch::async, [&] {
    Socket two = knock(master, hello_of(2, 3, "secret"), 5);
    Socket one = knock(master, hello_of(1, 3, "secret"), 5);
    written.get_future().wait();
    std::string heard;
    for (const Socket* s : {&one, &two}) {
      uint8_t byte = 0;
      EXPECT_EQ(receive_all(s->fd(), &byte, 1, Clock::now() + std::chrono::seconds(5)), Transfer::Done);
      heard += char(byte);
    }
    return heard;
  });
  std::map<int, Socket> admitted;
  const Clock::time_point start = Clock::now();
  EXPECT_NO_THROW(listener.admit(3, "secret", std::chrono::seconds(5),
                                 [&](int rank, Socket connection, const std::string& peer) {
                                   EXPECT_EQ(peer.rfind("127.0.0.1:", 0), 0u) << peer;
                                   admitted.emplace(rank, std::move(connection));
                                 }));
  EXPECT_LT(seconds_since(start), 4.0);
  ASSERT_EQ(admitted.size(), 2u);
  // What rank 0 writes on the connection it was handed reaches the rank it admitted there.
  for (auto& [rank, connection] : admitted) {
    const uint8_t byte = uint8_t('0' + rank);
    EXPECT_EQ(send_all(connection.fd(), &byte, 1, Clock::now() + std::chrono::seconds(5)), Transfer::Done);
  }
  written.set_value();
  EXPECT_EQ(peers.get(), "12");
}

TEST(DataParallelRendezvous, AnotherRunIdIsTurnedAwayOnBothSides) {
  RendezvousListener listener("127.0.0.1:0");
  const std::string master = "127.0.0.1:" + std::to_string(listener.port());
  auto peer = std::async(std::launch::async, [&] { return refusal(master, hello_of(1, 2, "guess"), 5); });
  try {
    std::vector<int> ranks;
    listener.admit(2, "secret", std::chrono::seconds(1), note_ranks(ranks));
    ADD_FAILURE() << "rank 0 admitted a rank of another run";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 1 did not join within 1 s (2 ranks expected at " + master +
                        "); turned away: 127.0.0.1:"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find(" left when asked to prove the run id (another run id?)"), std::string::npos) << what;
  }
  const std::string e = peer.get();
  EXPECT_EQ(e, "--master " + master +
                   ": rank 0 there runs with another run id: give every rank the same --run-id (or "
                   "TRANSLUTION_RUN_ID)");
}

TEST(DataParallelRendezvous, AnotherProtocolVersionIsNamedOnBothSides) {
  RendezvousListener listener("127.0.0.1:0");
  const std::string master = "127.0.0.1:" + std::to_string(listener.port());
  Knock newer = hello_of(1, 2, "secret");
  newer.hello.version = kRendezvousVersion + 1;
  auto peer = std::async(std::launch::async, [&] { return refusal(master, newer, 5); });
  try {
    std::vector<int> ranks;
    listener.admit(2, "secret", std::chrono::seconds(1), note_ranks(ranks));
    ADD_FAILURE() << "rank 0 admitted a rank of another protocol version";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("speaks rendezvous protocol " + std::to_string(kRendezvousVersion + 1)),
        std::string::npos)
        << e.what();
  }
  EXPECT_EQ(peer.get(), "--master " + master + ": rank 0 there speaks rendezvous protocol " +
                            std::to_string(kRendezvousVersion) + " and this rank " +
                            std::to_string(kRendezvousVersion + 1) +
                            ": run the same Translution release on every machine");
  // And a rank 0 of another version, as this rank reads its reply.
  Reply other;
  other.version = 7;
  expect_one_line_refusal(
      text_of(encode_reply(other)), false,
      "rank 0 there speaks rendezvous protocol 7 and this rank " + std::to_string(kRendezvousVersion));
}

TEST(DataParallelRendezvous, JunkBytesAreNotARankZero) {
  expect_one_line_refusal(std::string(64, '\x01'), false,
                          "what answers there is not a Translution rank 0 (it sent \"\\x01\\x01");
}

TEST(DataParallelRendezvous, AnHttpServerIsNotARankZero) {
  expect_one_line_refusal("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", true,
                          "is not a Translution rank 0 (it sent \"HTTP/1.1 400 Bad");
}

TEST(DataParallelRendezvous, ASilentAcceptorIsGivenUpAtTheDeadline) {
  expect_one_line_refusal("", false, "accepted the connection but gave no rendezvous answer within 2 s");
}

TEST(DataParallelRendezvous, AnAcceptorThatClosesIsNamed) {
  expect_one_line_refusal("", true, "closed the connection without an answer");
  const Reply admitted;
  expect_one_line_refusal(text_of(encode_reply(admitted)).substr(0, 10), true,
                          "closed the connection after 10 bytes of an answer");
}

// c10d's store client sized a read by the first 8 bytes it got: here the largest length there is,
// after and without the magic. Nothing read sets a length, so neither is more than a refusal.
TEST(DataParallelRendezvous, ALengthBombIsOnlyBytes) {
  const std::string huge(8, '\xff');
  expect_one_line_refusal(huge + std::string(56, '\x7f'), false, "(it sent \"\\xff\\xff");
  const std::string magic(kRendezvousMagic, sizeof kRendezvousMagic);
  expect_one_line_refusal(magic + std::string(kReplyBytes - magic.size(), '\xff'), false,
                          "rank 0 there speaks rendezvous protocol 4294967295 and this rank " +
                              std::to_string(kRendezvousVersion));
  Reply odd;
  odd.verdict = Verdict(0xffffffffu);
  expect_one_line_refusal(text_of(encode_reply(odd)), false, "which this release does not understand");
}

// Rank 0's proof covers the rank's fresh nonce: one seen before (here, one made for another
// nonce with the right run id) does not pass, and the rank proves nothing to what sent it.
TEST(DataParallelRendezvous, AReplayedProofIsNotRankZeros) {
  Hello earlier = hello_of(1, 2, "secret").hello;  // its nonce: zeros, never a fresh one
  Reply replayed;
  replayed.verdict = Verdict::Prove;
  replayed.nonce = fresh_nonce();
  replayed.proof = rendezvous_proof("secret", true, earlier, replayed.nonce);
  expect_one_line_refusal(text_of(encode_reply(replayed)), false, "rank 0 there runs with another run id");
}

// A connection to 127.0.0.1:`port`, blocking.
Socket connect_local(uint16_t port) {
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  EXPECT_EQ(::connect(s.fd(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return s;
}

// A rank driven by hand, step by step: its hello sent and rank 0's reply read, then `proof` sent
// (the magic, then the 32 bytes `prove` makes of the reply); returns the last verdict.
template <typename Prove>
uint32_t rank_by_hand(
    uint16_t port, Prove prove, const std::function<void()>& between = [] {}) {
  const Socket s = connect_local(port);
  Hello hello = hello_of(1, 2, "").hello;
  hello.nonce = fresh_nonce();
  const auto hello_bytes = encode_hello(hello);
  std::array<uint8_t, kReplyBytes> reply{};
  std::array<uint8_t, kVerdictBytes> verdict{};
  const auto by = Clock::now() + std::chrono::seconds(5);
  EXPECT_EQ(send_all(s.fd(), hello_bytes.data(), hello_bytes.size(), by), Transfer::Done);
  EXPECT_EQ(receive_all(s.fd(), reply.data(), reply.size(), by), Transfer::Done);
  between();
  Nonce theirs;
  std::copy(reply.begin() + 20, reply.begin() + 36, theirs.begin());
  const Sha256Digest made = prove(hello, theirs);
  std::array<uint8_t, kProofBytes> proof{};
  std::copy(std::begin(kRendezvousMagic), std::end(kRendezvousMagic), proof.begin());
  std::copy(made.begin(), made.end(), proof.begin() + 8);
  EXPECT_EQ(send_all(s.fd(), proof.data(), proof.size(), by), Transfer::Done);
  EXPECT_EQ(receive_all(s.fd(), verdict.data(), verdict.size(), by), Transfer::Done);
  return get_u32(&verdict[8]);
}

// A process that does not know the run id cannot make a rank's proof: it is turned away, and the
// run's rank 1 is admitted after it.
TEST(DataParallelRendezvous, AForgedProofIsTurnedAway) {
  RendezvousListener listener("127.0.0.1:0");
  const std::string master = "127.0.0.1:" + std::to_string(listener.port());
  auto others = std::async(std::launch::async, [&] {
    const uint32_t verdict =
        rank_by_hand(listener.port(), [](const Hello&, const Nonce&) { return Sha256Digest{}; });
    const Socket admitted = knock(master, hello_of(1, 2, "secret"), 5);
    return verdict;
  });
  std::vector<int> ranks;
  EXPECT_NO_THROW(listener.admit(2, "secret", std::chrono::seconds(5), note_ranks(ranks)));
  EXPECT_EQ(others.get(), uint32_t(Verdict::OtherRunId));
  EXPECT_EQ(ranks, std::vector<int>{1});
}

// Connections that send nothing give way to newer ones once 32 are pending, but a rank proving
// the run id is spared: a flood of them cannot cut it off between its hello and its proof.
TEST(DataParallelRendezvous, AFloodOfSilentConnectionsSparesARankProving) {
  RendezvousListener listener("127.0.0.1:0");
  auto rank = std::async(std::launch::async, [&] {
    std::vector<Socket> flood;
    return rank_by_hand(
        listener.port(),
        [](const Hello& hello, const Nonce& theirs) {
          return rendezvous_proof("secret", false, hello, theirs);
        },
        [&] {
          for (int i = 0; i < 40; ++i) flood.push_back(connect_local(listener.port()));
          std::this_thread::sleep_for(std::chrono::milliseconds(300));  // rank 0 takes them all in
        });
  });
  std::vector<int> ranks;
  EXPECT_NO_THROW(listener.admit(2, "secret", std::chrono::seconds(5), note_ranks(ranks)));
  EXPECT_EQ(rank.get(), uint32_t(Verdict::Admitted));
  EXPECT_EQ(ranks, std::vector<int>{1});
}

TEST(DataParallelRendezvous, NothingListeningIsUnreachableWithinTheTimeout) {
  uint16_t port = 0;
  {
    RendezvousListener probe("127.0.0.1:0");  // a port that was free a moment ago
    port = probe.port();
  }
  double seconds = 0;
  const std::string master = "127.0.0.1:" + std::to_string(port);
  const std::string e = refusal(master, hello_of(1, 2, "secret"), 1, &seconds);
  EXPECT_EQ(e, "--master " + master +
                   ": cannot reach rank 0 there within 1 s (is rank 0 started, and the port open?)");
  EXPECT_GE(seconds, 0.9);
  EXPECT_LE(seconds, 3.0);
}

// Rank 0 serves connections side by side: a silent one, junk and a wrong run id hold up no rank
// of the run, and are listed if a rank goes missing.
TEST(DataParallelRendezvous, NonPeersAtRankZeroHoldUpNoRank) {
  RendezvousListener listener("127.0.0.1:0");
  const std::string master = "127.0.0.1:" + std::to_string(listener.port());
  auto others = std::async(std::launch::async, [&] {
    const int silent = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0),
              junk = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(listener.port());
    ::connect(silent, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::connect(junk, reinterpret_cast<sockaddr*>(&a), sizeof a);
    [[maybe_unused]] ssize_t n = ::send(junk, "GET / HTTP/1.0\r\n\r\n", 18, MSG_NOSIGNAL);
    const std::string wrong = refusal(master, hello_of(1, 2, "guess"), 5);
    const Socket admitted = knock(master, hello_of(1, 2, "secret"), 5);
    ::close(silent);
    ::close(junk);
    return wrong;
  });
  std::vector<int> ranks;
  const Clock::time_point start = Clock::now();
  EXPECT_NO_THROW(listener.admit(2, "secret", std::chrono::seconds(5), note_ranks(ranks)));
  EXPECT_LT(seconds_since(start), 4.0);
  const std::string wrong = others.get();
  EXPECT_NE(wrong.find("another run id"), std::string::npos) << wrong;
  EXPECT_EQ(ranks, std::vector<int>{1});
}

TEST(DataParallelRendezvous, AnotherWorldSizeStopsBothSides) {
  RendezvousListener listener("127.0.0.1:0");
  const std::string master = "127.0.0.1:" + std::to_string(listener.port());
  auto peer = std::async(std::launch::async, [&] { return refusal(master, hello_of(1, 3, "secret"), 5); });
  try {
    std::vector<int> ranks;
    listener.admit(2, "secret", std::chrono::seconds(5), note_ranks(ranks));
    ADD_FAILURE() << "rank 0 admitted a rank of another world size";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "rank 1 was started with --world-size 3 and rank 0 with 2: every rank needs the same");
  }
  EXPECT_EQ(peer.get(),
            "rank 0 was started with --world-size 2 and rank 1 with 3: every rank needs the same");
}

TEST(DataParallelRendezvous, ARankClaimedTwiceIsTurnedAway) {
  RendezvousListener listener("127.0.0.1:0");
  const std::string master = "127.0.0.1:" + std::to_string(listener.port());
  auto peers = std::async(std::launch::async, [&] {
    const Socket first = knock(master, hello_of(1, 3, "secret"), 5);
    const std::string second = refusal(master, hello_of(1, 3, "secret"), 5);
    const std::string zero = refusal(master, hello_of(0, 3, "secret"), 5);
    const Socket third = knock(master, hello_of(2, 3, "secret"), 5);
    return std::make_tuple(second, zero);
  });
  std::vector<int> ranks;
  EXPECT_NO_THROW(listener.admit(3, "secret", std::chrono::seconds(5), note_ranks(ranks)));
  const auto [second, zero] = peers.get();
  EXPECT_EQ(ranks, (std::vector<int>{1, 2}));
  EXPECT_EQ(second,
            "another process already joined this run as rank 1 (--rank must differ on every process)");
  EXPECT_NE(zero.find("rank 0 there does not take rank 0"), std::string::npos) << zero;
}

TEST(DataParallelRendezvous, APortInUseIsOneLine) {
  RendezvousListener first("127.0.0.1:0");
  const std::string master = "127.0.0.1:" + std::to_string(first.port());
  try {
    RendezvousListener second(master);
    ADD_FAILURE() << "bound a port in use";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "--master " + master + ": port " + std::to_string(first.port()) +
                  " is in use on this machine (another run's rank 0?): choose another port");
  }
}

// Two ranks over TCP as two machines would meet: the handshake, then c10d's store and Gloo.
TEST(DataParallelRendezvous, TwoRanksMeetAcrossMachinesWithTheirRunId) {
  if (!has_gloo()) GTEST_SKIP() << "this build has no Gloo backend";
  uint16_t port = 0;
  {
    RendezvousListener probe("127.0.0.1:0");
    port = probe.port();
  }
  std::vector<std::string> errors(2);
  std::vector<double> sums(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      try {
        GroupOptions o = options(r, "127.0.0.1:" + std::to_string(port));
        o.run_id = "a secret of more words";
        DataParallel parallel(ProcessGroup::join(o, "same"));
        sums[size_t(r)] = parallel.sum({double(r + 1), 0, 0}).loss_sum;
      } catch (const std::exception& e) {
        errors[size_t(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors, (std::vector<std::string>{"", ""}));
  EXPECT_EQ(sums, (std::vector<double>{3, 3}));
}

}  // namespace
}  // namespace translution
