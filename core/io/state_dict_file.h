#pragma once
// State dicts in PyTorch's own file format: what `torch.save(model.state_dict(), f)`
// writes (a zip archive holding a pickle and the tensors' bytes). The records are
// read by the bounded reader of io/zip_records.h and written by LibTorch's zip
// writer; io/state_dict_pickle.h reads and writes the pickle. Files go both ways
// between the engine and PyTorch without Python.
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace translution {

// Name and tensor, in the file's order.
using StateDict = std::vector<std::pair<std::string, at::Tensor>>;

// Throws translution::Error naming the file and what is wrong: missing, not a
// PyTorch archive, a pickle that asks for anything but tensors in a dict of
// names, a value that is not a tensor (named by its key).
StateDict read_state_dict(const std::string& path);
// The same for a file's bytes already in memory (`name` is used in messages).
StateDict parse_state_dict(const std::vector<char>& bytes, const std::string& name);

// Writes atomically, as `torch.load` reads it: a reader sees the old file or the
// whole new one.
void write_state_dict(const std::string& path, const StateDict& tensors);

}  // namespace translution
