#pragma once
// Each CLI command group is one function taking the words after its name.
#include <string>
#include <vector>

namespace translution::cli {

int data_command(const std::vector<std::string>& words);
int model_command(const std::vector<std::string>& words);
int bench_command(const std::vector<std::string>& words);
int train_command(const std::vector<std::string>& words);
int eval_command(const std::vector<std::string>& words);
int sweep_command(const std::vector<std::string>& words);
int predict_command(const std::vector<std::string>& words);
int checkpoint_command(const std::vector<std::string>& words);

}  // namespace translution::cli
