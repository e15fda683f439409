#pragma once
// Learning rate at a step: linear warm-up from lr/warmup to lr, then a cosine
// decay to min_lr at the last step (the public code's schedule, per step).
#include <cstdint>

namespace translution {

double scheduled_lr(int64_t step, int64_t total_steps, int64_t warmup_steps, double lr, double min_lr);

}  // namespace translution
