#pragma once
// The pickle inside a torch.save archive, for state dicts: a restricted reader,
// and a writer of exactly what torch.save writes. The same reader takes the
// TorchScript module pickles of a LibTorch OutputArchive (format-1 checkpoints),
// which hold the same tensors in objects of LibTorch's own "__torch__" Module classes.
//
// LibTorch 1.13's own unpickler (torch::pickle_load) cannot read what
// `torch.save(model.state_dict(), f)` writes: it fails on the OrderedDict's
// `_metadata` and on the SETITEM opcode (pytorch/pytorch issues 100741 and 67902;
// fixed only in much later releases). This reader understands exactly what a
// state dict needs: dicts, lists, tuples, strings, numbers, the tensor-rebuilding
// functions and storages of torch.save. Any other global a pickle names (a class,
// a function) is refused with its name, and nothing is ever called.
//
// A pickle is a program for a stack machine, so a small file can describe a deep
// or huge structure. The reader keeps every value in one flat table (no value
// owns another: no recursion builds, walks or frees them) and refuses, in one
// line naming the limit, a pickle that nests deeper than kMaxPickleDepth or grows
// its stack, memo, values or containers past the bounds below.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace translution {

constexpr int64_t kMaxPickleDepth = 1000;
constexpr int64_t kMaxPickleStack = 1000000;
constexpr int64_t kMaxPickleMemo = 1000000;
constexpr int64_t kMaxPickleValues = 2000000;
constexpr int64_t kMaxPickleContainer = 1000000;  // the entries of one list, tuple or dict
constexpr int64_t kMaxPickleEntries = 2000000;    // of all containers together
constexpr size_t kMaxPickleNameBytes = 4096;      // a flattened attribute path
// A pickle of names and shapes (the tensors are records of their own), and the names and
// texts it yields together: a short string used many times is copied each time.
constexpr uint64_t kMaxPickleBytes = uint64_t(64) << 20;
constexpr uint64_t kMaxPickleTextBytes = uint64_t(64) << 20;

// Returns the bytes of storage `key` (the archive's record data/<key>).
using StorageBytes = std::function<std::vector<char>(const std::string& key)>;

// The pickled top-level dict as (name, tensor) pairs in the pickle's order.
// Throws translution::Error (without the file's name; the caller adds it) for a
// pickle outside that subset or past a limit, a value that is not a tensor
// (naming its key), or a tensor that does not fit its storage.
std::vector<std::pair<std::string, at::Tensor>> unpickle_state_dict(const std::vector<char>& pickle,
                                                                    const StorageBytes& storage);

// One value of a module pickle that is not a container.
struct PickledLeaf {
  enum class Kind { None, Bool, Int, Float, String, Tensor } kind = Kind::None;
  int64_t integer = 0;  // Int, Bool
  double real = 0;      // Float
  std::string text;     // String
  at::Tensor tensor;    // Tensor
};

// The leaves of a TorchScript module pickle by their dotted path, in the pickle's
// order: a module's attribute "config" as "config", a submodule's tensor as
// "weights.blocks.0.norm.weight", a tuple's items as "betas.0", "betas.1".
// Besides the state-dict subset, it takes LibTorch's "__torch__" Module classes,
// created empty (NEWOBJ) and given a dict of attributes (BUILD); a container
// reached twice (shared or cyclic) is refused. Throws translution::Error as above.
std::vector<std::pair<std::string, PickledLeaf>> unpickle_module(const std::vector<char>& pickle,
                                                                 const StorageBytes& storage);

// The pickle torch.save writes for an OrderedDict of tensors (protocol 2), which
// `torch.load` reads, with weights_only=True too. Tensor i's elements are the
// archive's record data/<i>: `storages` receives them, contiguous, in order.
std::vector<char> pickle_state_dict(const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                                    std::vector<at::Tensor>* storages);

}  // namespace translution
