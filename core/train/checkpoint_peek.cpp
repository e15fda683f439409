#include "train/checkpoint_peek.h"

#include <exception>

#include "io/byte_source.h"
#include "io/safetensors_file.h"

namespace translution {

std::optional<CheckpointPeek> peek_checkpoint(const std::string& path) {
  try {
    const FileBytes file(path);
    const SafetensorsHeader header = read_safetensors_header(file);
    const auto& meta = header.metadata;
    const auto format = meta.find("format"), config = meta.find("config");
    if (format == meta.end() || format->second != "translution-checkpoint" || config == meta.end())
      return std::nullopt;
    CheckpointPeek peek;
    peek.config = ViTConfig::from_text(config->second);
    if (const auto train = meta.find("train_config"); train != meta.end())
      peek.training = TrainConfig::from_text(train->second);
    peek.file_bytes = int64_t(file.size());
    return peek;
  } catch (const std::exception&) {  // not readable this way: the full load reports why
    return std::nullopt;
  }
}

}  // namespace translution
