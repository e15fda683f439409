#pragma once
// Checkpoints of format 1, converted to the current format (train/checkpoint.h)
// without LibTorch's deserializer. Format 1 was a header line
// "translution-checkpoint 1 bytes=N md5=HEX", then a LibTorch OutputArchive: a
// zip holding TorchScript module pickles and the tensors' bytes, with the AdamW
// state as a second such archive inside a uint8 tensor. Here the zips are read by
// io/zip_records.h and every pickle by the restricted, bounded reader of
// io/state_dict_pickle.h; nothing in the file is run.
#include <string>

#include "train/checkpoint.h"

namespace translution {

// A format-1 file is at most this large (the largest model with its AdamW state is some 1.4 GB).
constexpr uint64_t kMaxFormat1Bytes = uint64_t(16) << 30;

// The checkpoint a format-1 file holds, training state included where it has one.
// Throws translution::Error naming the file and what is wrong, in one line: not
// format 1, truncated or not matching its checksum, a pickle outside the subset or
// past a limit, a weight missing or of the wrong shape, a tensor holding NaN or
// infinity, AdamW state that does not fit the model.
Checkpoint read_format1_checkpoint(const std::string& path);
// The same for a file's bytes already in memory (`name` is used in messages).
Checkpoint parse_format1_checkpoint(const std::string& bytes, const std::string& name);

}  // namespace translution
