#include "io/state_dict_file.h"

#include <fstream>
#include <iterator>
#include <memory>

#include <caffe2/serialize/inline_container.h>

#include "io/byte_source.h"
#include "io/state_dict_pickle.h"
#include "io/zip_records.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace translution {
namespace {

// A state dict file is read whole; none of the public code's models comes near this.
constexpr uint64_t kMaxStateDictBytes = uint64_t(16) << 30;

std::vector<char> file_bytes(const std::string& path) {
  const FileBytes file(path);
  if (file.size() == 0) throw Error(path + ": the file is empty");
  if (file.size() > kMaxStateDictBytes)
    throw Error(path + ": the file has " + std::to_string(file.size()) +
                " bytes, more than a state dict this engine reads");
  std::vector<char> bytes(size_t(file.size()));
  file.read(0, bytes.data(), bytes.size());
  return bytes;
}

}  // namespace

StateDict read_state_dict(const std::string& path) { return parse_state_dict(file_bytes(path), path); }

StateDict parse_state_dict(const std::vector<char>& bytes, const std::string& name) {
  // A torch.save zip archive starts with a local file header, "PK\3\4".
  if (bytes.size() < 4 || bytes[0] != 'P' || bytes[1] != 'K' || bytes[2] != 3 || bytes[3] != 4)
    throw Error(name + ": not a PyTorch archive (torch.save writes a zip file; this one is not)");
  try {
    const ZipRecords archive(bytes.data(), bytes.size(), name);
    if (archive.has("byteorder")) {
      const std::vector<char> order = archive.read("byteorder");
      if (std::string(order.begin(), order.end()) != "little")
        throw Error(name + ": its tensors are stored big-endian, which this engine does not read");
    }
    StateDict out = unpickle_state_dict(archive.read("data.pkl"),
                                        [&](const std::string& key) { return archive.read("data/" + key); });
    if (out.empty()) throw Error(name + ": the state dict is empty");
    return out;
  } catch (const Error& e) {
    const std::string what = e.what();  // the archive's messages name the file already; the pickle's do not
    throw Error(what.compare(0, name.size(), name) == 0 ? what : name + ": " + what);
  }
}

void write_state_dict(const std::string& path, const StateDict& tensors) {
  std::vector<at::Tensor> storages;
  const std::vector<char> pickle = pickle_state_dict(tensors, &storages);
  std::vector<char> bytes;
  {
    caffe2::serialize::PyTorchStreamWriter archive([&](const void* data, size_t size) {
      const char* p = static_cast<const char*>(data);
      bytes.insert(bytes.end(), p, p + size);
      return size;
    });
    archive.writeRecord("data.pkl", pickle.data(), pickle.size());
    archive.writeRecord("byteorder", "little", 6);
    for (size_t i = 0; i < storages.size(); ++i)
      archive.writeRecord("data/" + std::to_string(i), storages[i].data_ptr(), storages[i].nbytes());
    archive.writeEndOfFile();
  }
  write_file_atomically(path, [&](const std::string& temp) {
    std::ofstream out(temp, std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    out.close();
    if (!out) throw Error(path + ": cannot write the file");
  });
}

}  // namespace translution
