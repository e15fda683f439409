#include "io/state_dict_file.h"

#include <fstream>
#include <memory>

#include <caffe2/serialize/inline_container.h>

#include "io/byte_source.h"
#include "io/state_dict_pickle.h"
#include "io/zip_records.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace translution {
namespace {

// A torch.save zip archive starts with a local file header, "PK\3\4". Only the
// archive's directory and the records its pickle names are read, so a file that is
// something else is refused after a few bytes whatever its size.
StateDict parse(const ByteSource& source) {
  const std::string& name = source.name();
  if (source.size() == 0) throw Error(name + ": the file is empty");
  char magic[4] = {0, 0, 0, 0};
  if (source.size() >= 4) source.read(0, magic, 4);
  if (magic[0] != 'P' || magic[1] != 'K' || magic[2] != 3 || magic[3] != 4)
    throw Error(name + ": not a PyTorch archive (torch.save writes a zip file; this one is not)");
  try {
    const ZipRecords archive(source);
    if (archive.has("byteorder")) {
      const std::vector<char> order = archive.read("byteorder");
      if (std::string(order.begin(), order.end()) != "little")
        throw Error(name + ": its tensors are stored big-endian, which this engine does not read");
    }
    StateDict out = unpickle_state_dict(archive.read("data.pkl", kMaxPickleBytes),
                                        [&](const std::string& key) { return archive.read("data/" + key); });
    if (out.empty()) throw Error(name + ": the state dict is empty");
    return out;
  } catch (const Error& e) {
    const std::string what = e.what();  // the archive's messages name the file already; the pickle's do not
    throw Error(what.compare(0, name.size(), name) == 0 ? what : name + ": " + what);
  }
}

}  // namespace

StateDict read_state_dict(const std::string& path) { return parse(FileBytes(path)); }

StateDict parse_state_dict(const std::vector<char>& bytes, const std::string& name) {
  return parse(MemoryBytes(bytes.data(), bytes.size(), name));
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
