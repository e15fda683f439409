#include "train/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace translution {

double scheduled_lr(int64_t step, int64_t total_steps, int64_t warmup_steps, double lr, double min_lr) {
  if (step < warmup_steps) return lr * double(step + 1) / double(warmup_steps);
  const int64_t decay_steps = std::max<int64_t>(1, total_steps - warmup_steps);
  const double progress = std::clamp(double(step - warmup_steps) / double(decay_steps), 0.0, 1.0);
  return min_lr + 0.5 * (lr - min_lr) * (1 + std::cos(M_PI * progress));
}

}  // namespace translution
