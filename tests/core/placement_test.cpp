#include "data/placement.h"

#include <set>

#include <gtest/gtest.h>

using namespace translution;

TEST(Placement, StaticIsCentred) {
  EXPECT_EQ(place_digit(CanvasKind::Static, 84, 28, 0, Split::Train, 5), (Placement{28, 28}));
  EXPECT_EQ(place_digit(CanvasKind::Static, 64, 28, 9, Split::Test, 1), (Placement{18, 18}));
  EXPECT_EQ(place_digit(CanvasKind::Mnist, 28, 28, 0, Split::Test, 3), (Placement{0, 0}));
}

TEST(Placement, DynamicIsAPureFunctionOfSeedSplitIndex) {
  for (uint64_t i = 0; i < 100; ++i)
    EXPECT_EQ(place_digit(CanvasKind::Dynamic, 84, 28, 3, Split::Test, i),
              place_digit(CanvasKind::Dynamic, 84, 28, 3, Split::Test, i));
}

TEST(Placement, DynamicStaysInsideAndCoversEveryPosition) {
  std::set<int64_t> xs, ys;
  for (uint64_t i = 0; i < 20000; ++i) {
    const Placement p = place_digit(CanvasKind::Dynamic, 84, 28, 0, Split::Train, i);
    ASSERT_GE(p.x, 0);
    ASSERT_GE(p.y, 0);
    ASSERT_LE(p.x, 56);
    ASSERT_LE(p.y, 56);
    xs.insert(p.x);
    ys.insert(p.y);
  }
  EXPECT_EQ(xs.size(), 57u);  // uniform over all 57 valid columns
  EXPECT_EQ(ys.size(), 57u);
}

TEST(Placement, SplitsAndSeedsGiveDifferentStreams) {
  int same_split = 0, same_seed = 0;
  const int n = 5000;
  for (int i = 0; i < n; ++i) {
    const Placement train = place_digit(CanvasKind::Dynamic, 84, 28, 0, Split::Train, uint64_t(i));
    same_split += train == place_digit(CanvasKind::Dynamic, 84, 28, 0, Split::Test, uint64_t(i));
    same_seed += train == place_digit(CanvasKind::Dynamic, 84, 28, 1, Split::Train, uint64_t(i));
  }
  // Independent streams coincide with probability 1/57^2 per sample (about 1.5 of 5000).
  EXPECT_LT(same_split, 10);
  EXPECT_LT(same_seed, 10);
}

TEST(Placement, MovingTrajectoryBouncesInsideWithBoundedSteps) {
  for (uint64_t i = 0; i < 200; ++i) {
    const auto path = moving_trajectory(64, 28, 0, Split::Train, i, kMovingFrames);
    ASSERT_EQ(path.size(), size_t(kMovingFrames));
    for (size_t t = 0; t < path.size(); ++t) {
      ASSERT_GE(path[t].x, 0);
      ASSERT_LE(path[t].x, 36);
      ASSERT_GE(path[t].y, 0);
      ASSERT_LE(path[t].y, 36);
      if (t > 0) {  // speed is 2..5 px per frame; rounding adds at most 1 per axis
        EXPECT_LE(std::abs(path[t].x - path[t - 1].x), 6);
        EXPECT_LE(std::abs(path[t].y - path[t - 1].y), 6);
      }
    }
    // A moving sample is a frame of its own trajectory.
    const Placement frame = place_digit(CanvasKind::Moving, 64, 28, 0, Split::Train, i);
    EXPECT_NE(std::find(path.begin(), path.end(), frame), path.end());
  }
}
