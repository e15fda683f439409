#pragma once
// While one lives, no other holder draws from LibTorch's default generator: the
// initial weights of two models built at once on two threads (each holding one) never
// interleave, so a seed gives the same model. Draws that take none (a benchmark's
// random images) are not kept out. Nests on one thread (a seeded construction holds
// it across the seed and the draws).
#include <mutex>

namespace translution {

class ExclusiveDraws {
 public:
  ExclusiveDraws();
  ExclusiveDraws(const ExclusiveDraws&) = delete;
  ExclusiveDraws& operator=(const ExclusiveDraws&) = delete;

 private:
  std::lock_guard<std::recursive_mutex> hold_;
};

}  // namespace translution
