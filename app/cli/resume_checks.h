#pragma once
// What `train --resume` can and cannot change. A resumed run continues the saved
// model on its saved schedule: --steps extends it (never below the steps done),
// --precision and --fresh-positions apply from here on, and any other model or
// schedule option given must agree with the checkpoint, or the run is refused
// naming the option, so that nothing a user typed is silently ignored.
#include <functional>
#include <string>

#include "cli/model_options.h"
#include "train/checkpoint.h"
#include "train/train_config.h"

namespace translution::cli {

// `given(option)`: whether the user typed it. Throws translution::Error naming the option,
// its value and the checkpoint's.
void check_resume_options(const ModelOptions& model, const TrainConfig& schedule,
                          const std::function<bool(const std::string&)>& given, const Checkpoint& checkpoint,
                          const std::string& path);

}  // namespace translution::cli
