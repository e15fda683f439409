#pragma once
// The options that describe a model, shared by every command that builds one.
#include <set>
#include <string>

#include "cli/args.h"
#include "nn/vit_config.h"

namespace translution::cli {

std::set<std::string> model_flags(std::set<std::string> extra);
std::set<std::string> model_options(std::set<std::string> extra);
ViTConfig config_from_args(const Args& args);
// --matrix-threads auto|N (absent: `fallback`, 0 for auto): how many threads
// share one model's work (EngineOptions::matrix_threads).
int matrix_threads_option(const Args& args, int fallback);

}  // namespace translution::cli
