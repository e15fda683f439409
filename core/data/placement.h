#pragma once
// Where a digit sits on the canvas. Positions are pure functions of
// (seed, split, index): no RNG state, so a test set is identical on every run
// and machine, and any sample can be produced on its own (random access).
#include <cstdint>
#include <vector>

#include "data/mnist.h"

namespace translution {

enum class CanvasKind { Mnist, Static, Dynamic, Moving };

struct Placement {
  int64_t x = 0;  // column of the digit's left edge on the canvas
  int64_t y = 0;  // row of the digit's top edge
  bool operator==(const Placement& o) const { return x == o.x && y == o.y; }
};

// 64-bit hash of the sample key; different splits use different streams.
uint64_t sample_hash(uint64_t seed, Split split, uint64_t index, uint64_t stream = 0);

// Top-left corner for a `digit` x `digit` image on a `canvas` x `canvas` canvas.
Placement place_digit(CanvasKind kind, int64_t canvas, int64_t digit, uint64_t seed, Split split,
                      uint64_t index);

// Moving-MNIST trajectory: a digit bouncing off the canvas walls at constant
// velocity. Sample `index` of the moving dataset is one frame of its trajectory.
std::vector<Placement> moving_trajectory(int64_t canvas, int64_t digit, uint64_t seed, Split split,
                                         uint64_t index, int frames);

constexpr int kMovingFrames = 20;  // frames per trajectory, as in Moving MNIST

}  // namespace translution
