// Data-parallel training's parts: bucket plans, batch shares, fingerprints, and two
// ranks in one process (threads over a FileStore) summing gradients, handing over
// bytes and refusing mismatched partners. Multi-process runs are tests/e2e/distributed_test.sh.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include <ATen/ATen.h>

#include "dist/data_parallel.h"
#include "dist/process_group.h"
#include "temp_dir.h"

namespace translution {
namespace {

// The in-process ranks reduce CPU tensors: Gloo's work (a CUDA build may have NCCL alone).
bool has_gloo() { return ProcessGroup::backends().find("gloo") != std::string::npos; }

TEST(DataParallel, BucketsKeepOrderAndSize) {
  const std::vector<at::Tensor> p = {at::zeros({10}), at::zeros({10}), at::zeros({30}), at::zeros({5}, at::kDouble),
                                     at::zeros({5}, at::kDouble)};
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
  o.world_size = 2, o.rank = 2, o.master = "host:1";
  EXPECT_THROW(o.validate(), Error);
  o.rank = 1, o.master = "host";
  EXPECT_THROW(o.validate(), Error);
  o.master = "host:70000";
  EXPECT_THROW(o.validate(), Error);
  o.master = "file:";
  EXPECT_THROW(o.validate(), Error);
  o.master = "10.0.0.1:29500";
  EXPECT_NO_THROW(o.validate());
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
  o.rank = rank, o.world_size = world, o.master = master, o.timeout = std::chrono::seconds(20);
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
  const at::Tensor expected = at::cat({at::arange(1, 7, at::kDouble) * (0.75 + 2.5), at::full({4}, 0.75, at::kDouble)});
  EXPECT_TRUE(at::allclose(results[0], expected, 1e-6, 1e-6)) << results[0];
  EXPECT_TRUE(at::equal(results[0], results[1]));  // the same bits on every rank
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
  for (const std::string& e : errors) EXPECT_NE(e.find("rank 1 built other initial weights"), std::string::npos) << e;
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
    EXPECT_NE(std::string(e.what()).find("ranks 1, 2 did not join within 1 s"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace translution
