#pragma once
// Each command adds itself to the root CLI11 app (cli/command_line.h).
#include "cli/command_line.h"

namespace translution::cli {

void add_data_command(CLI::App& root, Runners& runners);
void add_model_command(CLI::App& root, Runners& runners);
void add_bench_command(CLI::App& root, Runners& runners);
void add_train_command(CLI::App& root, Runners& runners);
void add_eval_command(CLI::App& root, Runners& runners);
void add_sweep_command(CLI::App& root, Runners& runners);
void add_predict_command(CLI::App& root, Runners& runners);
void add_attribute_command(CLI::App& root, Runners& runners);
void add_checkpoint_command(CLI::App& root, Runners& runners);
void add_interop_commands(CLI::App& root, Runners& runners);

}  // namespace translution::cli
