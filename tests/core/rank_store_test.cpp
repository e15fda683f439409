// Rank 0's store across machines: the table's meaning (c10d's), the wire format's bounds, and
// the server and its clients over socket pairs, against ranks that send half a request, junk,
// or nothing, and a "rank 0" that answers what is not a reply or stops answering.
#include <chrono>
#include <future>
#include <thread>

#include <gtest/gtest.h>
#include <sys/socket.h>

#include "dist/socket.h"
#include "dist/store_client.h"
#include "dist/store_server.h"
#include "dist/store_table.h"
#include "dist/store_wire.h"
#include "util/error.h"

namespace translution {
namespace {

using std::chrono::milliseconds;
using Bytes = std::vector<uint8_t>;

Bytes bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string text(const Bytes& b) { return {b.begin(), b.end()}; }

StoreRequest request(StoreOp op, const std::string& key, const Bytes& value = {}, uint32_t expected = 0) {
  return {op, key, value, expected};
}

// Two connected ends: the first for the client, the second for the server (or a fake rank 0).
std::pair<Socket, Socket> socket_pair() {
  int fds[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds), 0);
  return {Socket(fds[0]), Socket(fds[1])};
}

// A rank's client served by `server` as `rank`.
std::unique_ptr<StoreClient> served_client(StoreServer& server, int rank) {
  auto [client_end, server_end] = socket_pair();
  server.serve(rank, std::move(server_end), "test:" + std::to_string(rank));
  return std::make_unique<StoreClient>(std::move(client_end), "test:0");
}

double seconds_since(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

// What `f` threw as a StoreFailure (failing the test where it threw nothing).
template <typename F>
std::string failure_of(F f) {
  try {
    f();
  } catch (const StoreFailure& e) {
    return e.what();
  }
  ADD_FAILURE() << "no StoreFailure";
  return {};
}

TEST(RankStore, TheTableGivesTheMeaningOfC10dsStores) {
  StoreTable t;
  EXPECT_EQ(t.apply(request(StoreOp::Get, "a")).status, StoreStatus::Missing);
  EXPECT_EQ(t.apply(request(StoreOp::Set, "a", bytes("x"))).status, StoreStatus::Ok);
  EXPECT_EQ(text(t.apply(request(StoreOp::Get, "a")).value), "x");
  EXPECT_EQ(decode_count(t.apply(request(StoreOp::Add, "n", encode_count(5))).value), 5);
  EXPECT_EQ(decode_count(t.apply(request(StoreOp::Add, "n", encode_count(-7))).value), -2);
  EXPECT_EQ(text(t.apply(request(StoreOp::Get, "n")).value), "-2");  // a count reads as decimal text
  EXPECT_EQ(t.apply(request(StoreOp::Add, "a", encode_count(1))).status, StoreStatus::NotACount);
  EXPECT_EQ(t.apply(request(StoreOp::Set, "big", bytes("9223372036854775807"))).status, StoreStatus::Ok);
  EXPECT_EQ(t.apply(request(StoreOp::Add, "big", encode_count(1))).status, StoreStatus::NotACount);
  EXPECT_EQ(decode_count(t.apply(request(StoreOp::Count, "")).value), 3);
  // Compare-and-set: absent and expected empty takes the desired value; absent and expected
  // something answers the expected value and sets nothing; a match swaps; a mismatch answers
  // what is there.
  EXPECT_EQ(text(t.apply(request(StoreOp::CompareSet, "c", bytes("new"), 0)).value), "new");
  EXPECT_EQ(text(t.apply(request(StoreOp::CompareSet, "d", bytes("oldnew"), 3)).value), "old");
  EXPECT_EQ(t.apply(request(StoreOp::Check, "d")).status, StoreStatus::Missing);
  EXPECT_EQ(text(t.apply(request(StoreOp::CompareSet, "c", bytes("newnewer"), 3)).value), "newer");
  EXPECT_EQ(text(t.apply(request(StoreOp::CompareSet, "c", bytes("newlast"), 3)).value), "newer");
  EXPECT_EQ(t.apply(request(StoreOp::Delete, "c")).status, StoreStatus::Ok);
  EXPECT_EQ(t.apply(request(StoreOp::Delete, "c")).status, StoreStatus::Missing);
  EXPECT_EQ(t.apply(request(StoreOp::Check, "a")).status, StoreStatus::Ok);
}

TEST(RankStore, TheTableHoldsNoMoreThanItsBound) {
  StoreTable t(1000);
  EXPECT_EQ(t.apply(request(StoreOp::Set, "a", Bytes(2000))).status, StoreStatus::Full);
  EXPECT_EQ(t.apply(request(StoreOp::Set, "a", Bytes(800))).status, StoreStatus::Ok);
  EXPECT_EQ(t.apply(request(StoreOp::Set, "b", Bytes(800))).status, StoreStatus::Full);
  EXPECT_EQ(t.apply(request(StoreOp::Set, "a", Bytes(10))).status,
            StoreStatus::Ok);  // a value replaced frees room
  EXPECT_EQ(t.apply(request(StoreOp::Set, "b", Bytes(800))).status, StoreStatus::Ok);
}

TEST(RankStore, AHeaderThatIsNotARequestIsRefusedBeforeAnythingIsAllocated) {
  auto header = [](uint32_t op, uint32_t key, uint32_t value, uint32_t expected) {
    Bytes b(kStoreRequestHeader);
    put_u32(&b[0], op);
    put_u32(&b[4], key);
    put_u32(&b[8], value);
    put_u32(&b[12], expected);
    return b;
  };
  auto refusal = [](Bytes b) {
    try {
      size_t at = 0;
      take_store_request(b, at);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(taken)");
  };
  EXPECT_EQ(refusal(header(99, 1, 1, 0)), "request 99 is not one of the store's");
  EXPECT_EQ(refusal(header(1, 0xffffffffu, 0, 0)), "a key of 4294967295 bytes is beyond the bound of 4096");
  EXPECT_NE(refusal(header(1, 1, 0xffffffffu, 0)).find("a value of 4294967295 bytes is beyond the bound"),
            std::string::npos);
  EXPECT_EQ(refusal(header(3, 1, 4, 0)), "an add request carries an amount of 4 bytes, not 8");
  EXPECT_EQ(refusal(header(7, 1, 4, 5)), "a compare-and-set request expects 5 of its 4 bytes");
  // A request not all there is waited for; a whole one is taken, leaving the next one's bytes.
  Bytes two = encode_store_request(request(StoreOp::Set, "key", bytes("value")));
  const Bytes next = encode_store_request(request(StoreOp::Get, "key"));
  two.insert(two.end(), next.begin(), next.begin() + 5);
  const Bytes part(two.begin(), two.begin() + 20);
  size_t at = 0;
  EXPECT_FALSE(take_store_request(part, at).has_value());
  EXPECT_EQ(at, 0u);
  const std::optional<StoreRequest> taken = take_store_request(two, at);
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->key, "key");
  EXPECT_EQ(text(taken->value), "value");
  EXPECT_EQ(two.size() - at, 5u);
  EXPECT_FALSE(take_store_request(two, at).has_value());
}

TEST(RankStore, RanksReadAndWriteRankZerosTable) {
  auto server = std::make_shared<StoreServer>();
  StoreClient zero(server);
  auto one = served_client(*server, 1), two = served_client(*server, 2);
  const milliseconds limit(5000);
  one->set("hello/1", bytes("from one"), limit);
  EXPECT_EQ(text(two->get("hello/1", limit)), "from one");
  EXPECT_EQ(text(zero.get("hello/1", limit)), "from one");
  EXPECT_EQ(one->add("n", 2, limit), 2);
  EXPECT_EQ(two->add("n", 3, limit), 5);
  EXPECT_TRUE(zero.check({"hello/1", "n"}, limit));
  EXPECT_FALSE(two->check({"hello/1", "missing"}, limit));
  EXPECT_EQ(text(one->compare_set("c", {}, bytes("v"), limit)), "v");
  EXPECT_EQ(two->count(limit), 3);
  EXPECT_TRUE(two->remove("c", limit));
  EXPECT_FALSE(one->remove("c", limit));
  // A get waits for a key that comes later (set here by rank 0 itself).
  auto later = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(milliseconds(100));
    zero.set("late", bytes("here"), limit);
  });
  EXPECT_EQ(text(one->get("late", limit)), "here");
  later.get();
  EXPECT_TRUE(server->cut_off().empty());
}

// c10d's TCPStore served one request at a time: a stranger's half-sent request stalled every rank.
TEST(RankStore, AHalfSentRequestHoldsUpNoOtherRank) {
  auto server = std::make_shared<StoreServer>();
  auto [slow_end, server_end] = socket_pair();
  server->serve(1, std::move(server_end), "test:1");
  const Bytes whole = encode_store_request(request(StoreOp::Set, "evil", Bytes(100)));
  ASSERT_EQ(send_all(slow_end.fd(), whole.data(), 30, SteadyClock::now() + milliseconds(1000)),
            Transfer::Done);
  auto two = served_client(*server, 2);
  const SteadyClock::time_point start = SteadyClock::now();
  two->set("k", bytes("v"), milliseconds(5000));
  EXPECT_EQ(text(two->get("k", milliseconds(5000))), "v");
  EXPECT_LT(seconds_since(start), 1.0);
}

TEST(RankStore, WhatIsNotARequestCutsOffItsSenderAlone) {
  auto server = std::make_shared<StoreServer>();
  auto [hostile_end, server_end] = socket_pair();
  server->serve(3, std::move(server_end), "10.0.0.7:51812");
  Bytes junk(kStoreRequestHeader, 0xff);  // the largest sizes there are
  ASSERT_EQ(send_all(hostile_end.fd(), junk.data(), junk.size(), SteadyClock::now() + milliseconds(1000)),
            Transfer::Done);
  uint8_t byte = 0;  // the server closes the connection: the read ends, it does not wait
  EXPECT_EQ(receive_all(hostile_end.fd(), &byte, 1, SteadyClock::now() + milliseconds(5000)),
            Transfer::Closed);
  ASSERT_EQ(server->cut_off().size(), 1u);
  EXPECT_EQ(server->cut_off()[0],
            "rank 3 (10.0.0.7:51812) sent what is not a store request (request 4294967295 is not one of the "
            "store's)");
  auto two = served_client(*server, 2);
  EXPECT_EQ(two->add("n", 1, milliseconds(5000)), 1);
}

// A "rank 0" that reads a request and answers with `answer`, or nothing where it is empty.
std::string client_against(const Bytes& answer, bool close_after) {
  auto [client_end, fake_end] = socket_pair();
  StoreClient client(std::move(client_end), "10.0.0.1:29500");
  auto fake = std::async(std::launch::async, [&answer, close_after, end = std::move(fake_end)]() mutable {
    Bytes header(kStoreRequestHeader);
    receive_all(end.fd(), header.data(), header.size(), SteadyClock::now() + milliseconds(5000));
    send_all(end.fd(), answer.data(), answer.size(), SteadyClock::now() + milliseconds(5000));
    if (close_after) end = Socket();
    return std::move(end);  // kept open (where not closed) while the client asks again
  });
  const SteadyClock::time_point start = SteadyClock::now();
  const std::string first = failure_of([&] { client.count(milliseconds(300)); });
  EXPECT_LT(seconds_since(start), 2.0) << first;
  const Socket held = fake.get();
  // A later request fails the same way: at once where the connection broke, at its deadline
  // where rank 0 stays silent.
  EXPECT_EQ(failure_of([&] { client.count(milliseconds(300)); }), first);
  EXPECT_LT(seconds_since(start), 2.0);
  return first;
}

TEST(RankStore, AReplyThatIsNotOneIsAFailureNotAnAllocation) {
  Bytes bomb(kStoreReplyHeader, 0xff);
  EXPECT_EQ(client_against(bomb, false),
            "rank 0's store at 10.0.0.1:29500 answered what is not a store reply: a reply of status "
            "4294967295, which the store does not give");
  put_u32(&bomb[0], 0);
  EXPECT_NE(client_against(bomb, false).find("a reply of 4294967295 bytes, beyond the bound"),
            std::string::npos);
}

TEST(RankStore, ARankZeroThatStopsOrEndsIsNamed) {
  EXPECT_EQ(client_against({}, false),
            "rank 0's store at 10.0.0.1:29500 did not answer in time (a stopped rank 0?)");
  EXPECT_EQ(client_against({}, true),
            "rank 0's store at 10.0.0.1:29500 closed the connection (rank 0 ended?)");
}

// A reply that comes after its request gave up is read and let go before the next one's: a slow
// moment of rank 0 costs one request, never the connection (the heartbeat shares it).
TEST(RankStore, ALateReplyCostsOneRequestNotTheConnection) {
  auto [client_end, fake_end] = socket_pair();
  StoreClient client(std::move(client_end), "10.0.0.1:29500");
  auto fake = std::async(std::launch::async, [fd = fake_end.fd()] {
    for (const int64_t answer : {111, 222}) {
      Bytes request(kStoreRequestHeader);
      receive_all(fd, request.data(), request.size(), SteadyClock::now() + milliseconds(5000));
      if (answer == 111) std::this_thread::sleep_for(milliseconds(400));
      const Bytes reply = encode_store_reply({StoreStatus::Ok, encode_count(answer)});
      send_all(fd, reply.data(), reply.size(), SteadyClock::now() + milliseconds(5000));
    }
  });
  EXPECT_EQ(failure_of([&] { client.count(milliseconds(100)); }),
            "rank 0's store at 10.0.0.1:29500 did not answer in time (a stopped rank 0?)");
  EXPECT_EQ(client.count(milliseconds(5000)), 222);
  fake.get();
}

// A large exchange cut short by its deadline (a compare-and-set of 32 MB that answers 16 MB),
// then a large request: the rest of the first is sent and its reply read before the next goes,
// so neither side sends while the other does (each would wait on the other's full buffer).
TEST(RankStore, ALargeExchangeCutShortHoldsUpNoLargeRequest) {
  auto server = std::make_shared<StoreServer>();
  auto one = served_client(*server, 1);
  const Bytes large(16u << 20, 7);
  one->set("large", large, milliseconds(10000));
  try {
    one->compare_set("large", large, large, milliseconds(1));  // ends mid-way, or (rarely) whole
  } catch (const StoreFailure&) {
  }
  one->set("other", large, milliseconds(10000));
  EXPECT_EQ(one->get("other", milliseconds(10000)).size(), large.size());
  EXPECT_TRUE(server->cut_off().empty());
}

TEST(RankStore, AKeyThatNeverComesIsGivenUpAtTheLimit) {
  auto server = std::make_shared<StoreServer>();
  StoreClient zero(server);
  auto one = served_client(*server, 1);
  const SteadyClock::time_point start = SteadyClock::now();
  EXPECT_EQ(failure_of([&] { one->wait({"never"}, milliseconds(200)); }),
            "the key never did not come to rank 0's store at test:0 within 0.2 s");
  EXPECT_EQ(failure_of([&] { zero.get("never", milliseconds(200)); }),
            "the key never did not come to this rank's store within 0.2 s");
  EXPECT_LT(seconds_since(start), 2.0);
  EXPECT_EQ(one->add("n", 1, milliseconds(1000)), 1);  // a wait given up leaves the connection usable
}

}  // namespace
}  // namespace translution
