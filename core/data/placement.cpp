#include "data/placement.h"

#include <cmath>

namespace translution {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform integer in [0, n) from a hash (multiply-shift: no modulo bias worth noting).
int64_t uniform_below(uint64_t h, int64_t n) { return int64_t(((h >> 32) * uint64_t(n)) >> 32); }

double uniform01(uint64_t h) { return double(h >> 11) * (1.0 / 9007199254740992.0); }

// Folds an unbounded coordinate into [0, limit] as a ball bouncing between walls.
int64_t reflect(double p, int64_t limit) {
  if (limit == 0) return 0;
  const double period = 2.0 * double(limit);
  double m = std::fmod(p, period);
  if (m < 0) m += period;
  return int64_t(std::lround(m <= limit ? m : period - m));
}

}  // namespace

uint64_t sample_hash(uint64_t seed, Split split, uint64_t index, uint64_t stream) {
  const uint64_t split_salt = split == Split::Train ? 0x7261696eull : 0x74657374ull;
  uint64_t h = splitmix64(seed ^ (split_salt << 32));
  h = splitmix64(h ^ index);
  return splitmix64(h ^ (stream * 0xD6E8FEB86659FD93ull));
}

Placement place_digit(CanvasKind kind, int64_t canvas, int64_t digit, uint64_t seed, Split split,
                      uint64_t index) {
  const int64_t room = canvas - digit;  // largest valid top-left coordinate
  switch (kind) {
    case CanvasKind::Mnist:
    case CanvasKind::Static: return {room / 2, room / 2};
    case CanvasKind::Dynamic:
      return {uniform_below(sample_hash(seed, split, index, 0), room + 1),
              uniform_below(sample_hash(seed, split, index, 1), room + 1)};
    case CanvasKind::Moving: {
      const int frame = int(uniform_below(sample_hash(seed, split, index, 4), kMovingFrames));
      return moving_trajectory(canvas, digit, seed, split, index, frame + 1).back();
    }
  }
  return {};
}

std::vector<Placement> moving_trajectory(int64_t canvas, int64_t digit, uint64_t seed, Split split,
                                         uint64_t index, int frames) {
  const int64_t room = canvas - digit;
  const double x0 = uniform01(sample_hash(seed, split, index, 0)) * double(room);
  const double y0 = uniform01(sample_hash(seed, split, index, 1)) * double(room);
  const double angle = uniform01(sample_hash(seed, split, index, 2)) * 2.0 * M_PI;
  const double speed = 2.0 + 3.0 * uniform01(sample_hash(seed, split, index, 3));  // pixels per frame
  std::vector<Placement> path;
  for (int t = 0; t < frames; ++t)
    path.push_back(
        {reflect(x0 + speed * std::cos(angle) * t, room), reflect(y0 + speed * std::sin(angle) * t, room)});
  return path;
}

}  // namespace translution
