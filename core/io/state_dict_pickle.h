#pragma once
// The pickle inside a torch.save archive, for state dicts: a restricted reader,
// and a writer of exactly what torch.save writes.
//
// LibTorch 1.13's own unpickler (torch::pickle_load) cannot read what
// `torch.save(model.state_dict(), f)` writes: it fails on the OrderedDict's
// `_metadata` and on the SETITEM opcode (pytorch/pytorch issues 100741 and 67902;
// fixed only in much later releases). This reader understands exactly what a
// state dict needs: dicts, lists, tuples, strings, numbers, the tensor-rebuilding
// functions and storages of torch.save. Any other global a pickle names (a class,
// a function) is refused with its name, and nothing is ever called.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace translution {

// Returns the bytes of storage `key` (the archive's record data/<key>).
using StorageBytes = std::function<std::vector<char>(const std::string& key)>;

// The pickled top-level dict as (name, tensor) pairs in the pickle's order.
// Throws translution::Error (without the file's name; the caller adds it) for a
// pickle outside that subset, a value that is not a tensor (naming its key), or a
// tensor that does not fit its storage.
std::vector<std::pair<std::string, at::Tensor>> unpickle_state_dict(const std::vector<char>& pickle,
                                                                     const StorageBytes& storage);

// The pickle torch.save writes for an OrderedDict of tensors (protocol 2), which
// `torch.load` reads, with weights_only=True too. Tensor i's elements are the
// archive's record data/<i>: `storages` receives them, contiguous, in order.
std::vector<char> pickle_state_dict(const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                                    std::vector<at::Tensor>* storages);

}  // namespace translution
