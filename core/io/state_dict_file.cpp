#include "io/state_dict_file.h"

#include <fstream>
#include <iterator>
#include <memory>

#include <caffe2/serialize/in_memory_adapter.h>
#include <caffe2/serialize/inline_container.h>

#include "io/state_dict_pickle.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace translution {
namespace {

// LibTorch's messages run over several lines (and a stack trace): the first says what.
std::string first_line(const std::string& message) { return message.substr(0, message.find('\n')); }

std::vector<char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open the file");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.empty()) throw Error(path + ": the file is empty");
  return bytes;
}

std::vector<char> record(caffe2::serialize::PyTorchStreamReader& archive, const std::string& name) {
  if (!archive.hasRecord(name)) throw Error("the archive has no " + name);
  const auto [data, size] = archive.getRecord(name);
  const char* p = static_cast<const char*>(data.get());
  return std::vector<char>(p, p + size);
}

}  // namespace

StateDict read_state_dict(const std::string& path) { return parse_state_dict(file_bytes(path), path); }

StateDict parse_state_dict(const std::vector<char>& bytes, const std::string& name) {
  // A torch.save zip archive starts with a local file header, "PK\3\4".
  if (bytes.size() < 4 || bytes[0] != 'P' || bytes[1] != 'K' || bytes[2] != 3 || bytes[3] != 4)
    throw Error(name + ": not a PyTorch archive (torch.save writes a zip file; this one is not)");
  try {
    caffe2::serialize::PyTorchStreamReader archive(
        std::make_shared<caffe2::serialize::MemoryReadAdapter>(bytes.data(), off_t(bytes.size())));
    if (archive.hasRecord("byteorder")) {
      const std::vector<char> order = record(archive, "byteorder");
      if (std::string(order.begin(), order.end()) != "little")
        throw Error("its tensors are stored big-endian, which this engine does not read");
    }
    StateDict out = unpickle_state_dict(record(archive, "data.pkl"),
                                        [&](const std::string& key) { return record(archive, "data/" + key); });
    if (out.empty()) throw Error("the state dict is empty");
    return out;
  } catch (const Error& e) {
    throw Error(name + ": " + e.what());
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {  // the zip reader's
    throw Error(name + ": cannot read the PyTorch archive: " + first_line(e.what()));
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
