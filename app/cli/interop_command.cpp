// `translution import` and `translution export`: state dicts of the public
// Translution code's ViTs (io/public_vit_layout.h) in and out.
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "cli/memory_check.h"
#include "cli/model_options.h"
#include "io/public_vit_layout.h"
#include "io/pytorch_interop.h"
#include "train/checkpoint.h"
#include "train/memory_guard.h"
#include "util/available_memory.h"
#include "util/error.h"
#include "util/output_path.h"

namespace translution::cli {
namespace {

int import_file(const std::string& file, const ModelOptions& options, const std::string& out) {
  if (file.empty()) throw Error("import needs a state dict file (FILE.pt)");
  // Reading holds the archive's tensors in memory: a file larger than what is available is
  // refused before any of it is read (a sparse file can claim gigabytes on a few sectors).
  std::error_code ec;
  const double file_bytes = double(std::filesystem::file_size(file, ec));
  const AvailableMemory room = available_memory(c10::kCPU, false);
  if (!ec && room.bytes >= 0 && file_bytes > room.bytes)
    throw Error(file + ": reading it holds its " + format_bytes(file_bytes) + " in memory, but " +
                format_bytes(room.bytes) + " is available (" + room.source + ")");
  const StateDict tensors = read_state_dict(file);
  Checkpoint c;
  c.config = config_for_state_dict(options.config(), tensors);
  MemoryPlan building;  // the model the options name, before it is built (the file is read)
  building.config = c.config;
  building.opening = true;
  try {
    require_memory(building, c10::Device(c10::kCPU));
  } catch (const Error& e) {
    throw Error(file + ": " + e.what());
  }
  c.model = ViT(c.config);
  import_public_state_dict(c.model, tensors, file);
  c.metadata["imported_from"] = file;
  c.metadata["imported_as"] = "public " + public_vit_source(c.config);
  save_checkpoint(out, c);
  const std::string hybrid =
      c.config.first_blocks > 0 && !c.config.first_model.empty()
          ? " after " + std::to_string(c.config.first_blocks) + " of " + c.config.first_model
          : "";
  std::printf("%s: %zu tensors of a public %s model, %s%s, %lld parameters%s -> %s\n", file.c_str(),
              tensors.size(), public_vit_source(c.config).c_str(), c.config.model.c_str(), hybrid.c_str(),
              (long long)c.model->parameter_count(),
              c.config.position_embedding ? ", with its position embedding" : "", out.c_str());
  return 0;
}

int export_file(const std::string& path, const std::string& to, const std::string& out) {
  if (path.empty()) throw Error("export needs a checkpoint (FILE.ckpt)");
  if (to != "pytorch") throw Error("--to " + to + ": the one format is pytorch");
  check_checkpoints_to_open({path});
  const Checkpoint c = load_checkpoint(path);
  const StateDict tensors = export_public_state_dict(c.model);
  write_state_dict(out, tensors);
  std::printf("%s -> %s: %zu tensors; loads with strict=True into the public code's ViT/models/%s.py ViT\n",
              path.c_str(), out.c_str(), tensors.size(), public_vit_source(c.config).c_str());
  return 0;
}

}  // namespace

void add_interop_commands(CLI::App& root, Runners& runners) {
  struct Options {
    std::string file, out, to;
    ModelOptions model;
  };
  auto o = std::make_shared<Options>();
  CLI::App* import = root.add_subcommand(
      "import", "a PyTorch state dict of the public Translution code's ViTs, as a checkpoint");
  import->add_option("file", o->file, "written by torch.save(model.state_dict(), FILE)")
      ->type_name("FILE.pt");
  add_model_options(*import, o->model, true);
  import->add_option("--out", o->out, "checkpoint to write")->required()->type_name("FILE.ckpt");
  runners[import] = [o] {
    checked_output_path(o->out);  // before the input is read: a refusal costs nothing
    refuse_input_as_output(o->file, o->out);
    return import_file(o->file, o->model, o->out);
  };

  CLI::App* export_app = root.add_subcommand(
      "export", "a checkpoint as the state dict that the public code's matching ViT loads");
  export_app->add_option("file", o->file, "the checkpoint")->type_name("FILE.ckpt");
  export_app->add_option("--to", o->to, "format: pytorch")->required()->type_name("FORMAT");
  export_app->add_option("out", o->out, "state dict to write")->required()->type_name("OUT.pt");
  runners[export_app] = [o] {
    checked_output_path(o->out);
    refuse_input_as_output(o->file, o->out);
    return export_file(o->file, o->to, o->out);
  };
}

}  // namespace translution::cli
