#include "util/exclusive_draws.h"

namespace translution {
namespace {

std::recursive_mutex& default_generator_lock() {
  static std::recursive_mutex lock;
  return lock;
}

}  // namespace

ExclusiveDraws::ExclusiveDraws() : hold_(default_generator_lock()) {}

}  // namespace translution
