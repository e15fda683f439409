// A seeded mutation fuzzer for the readers of untrusted input: the IDX reader,
// the checkpoint reader (safetensors), the format-1 checkpoint reader of
// `checkpoint upgrade`, the PNG/JPEG reader, PyTorch archives, the pickle reader
// and the config text parsers. Each reader gets mutated copies of its seeds
// (tests/fuzz/seeds/READER/, and for the *_bombs readers seeds built here, too
// large to keep as files): bit flips, byte overwrites with boundary values,
// truncation, insertion, duplication and splices. A reader may accept an input or
// reject it with an exception; it may not crash (the process would die), hang
// (ctest's timeout) or allocate beyond the address-space limit set here
// (std::bad_alloc counts as a failure, and the input is saved for a look).
//
// A checkpoint carries digests of its header and its tensors, and a format-1 file
// an MD5 of its archive, so most damaged files stop there. Half of the inputs of
// those readers get the digests recomputed for their mutated bytes, as a forger
// would, and reach the parsers behind the check.
//
// usage: fuzz_readers SEED_DIR [--inputs N] [--seconds S] [--seed K] [--out DIR]
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <new>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <sys/resource.h>

#include "data/idx_file.h"
#include "image/image_file.h"
#include "io/state_dict_file.h"
#include "io/state_dict_pickle.h"
#include "nn/vit_config.h"
#include "train/checkpoint.h"
#include "train/checkpoint_upgrade.h"
#include "train/train_config.h"
#include "util/error.h"
#include "util/md5.h"

namespace fs = std::filesystem;
using Bytes = std::vector<unsigned char>;

namespace {

Bytes read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// One random edit of `input`; several are applied to each fuzzed input.
void mutate_once(Bytes& b, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n == 0 ? size_t(0) : size_t(rng() % n); };
  static const unsigned char boundary[] = {0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF};
  switch (rng() % 6) {
    case 0:  // flip a bit
      if (!b.empty()) b[pick(b.size())] ^= (unsigned char)(1u << (rng() % 8));
      break;
    case 1:  // a boundary byte, often where headers keep sizes
      if (!b.empty())
        b[rng() % 2 ? pick(std::min<size_t>(b.size(), 64)) : pick(b.size())] = boundary[rng() % 6];
      break;
    case 2:  // truncate
      b.resize(pick(b.size() + 1));
      break;
    case 3:  // insert random bytes
      b.insert(b.begin() + long(pick(b.size() + 1)), size_t(1 + rng() % 16), (unsigned char)(rng()));
      break;
    case 4: {  // duplicate a run
      if (b.empty()) break;
      const size_t from = pick(b.size()), len = std::min<size_t>(1 + rng() % 64, b.size() - from);
      const Bytes run(b.begin() + long(from), b.begin() + long(from + len));
      b.insert(b.begin() + long(pick(b.size() + 1)), run.begin(), run.end());
      break;
    }
    default:  // four bytes of 0xFF: a huge big-endian count or size
      if (b.size() >= 4) std::memset(&b[pick(std::min<size_t>(b.size(), 64) - 3)], 0xFF, 4);
  }
}

// "translution-checkpoint 1 bytes=N md5=H\n" + payload, for a mutated payload.
Bytes with_fresh_format1_header(const Bytes& checkpoint) {
  const auto newline = std::find(checkpoint.begin(), checkpoint.end(), '\n');
  if (newline == checkpoint.end()) return checkpoint;
  const Bytes payload(newline + 1, checkpoint.end());
  translution::Md5 md5;
  md5.update(payload.data(), payload.size());
  const std::string header =
      "translution-checkpoint 1 bytes=" + std::to_string(payload.size()) + " md5=" + md5.hex_digest() + "\n";
  Bytes out(header.begin(), header.end());
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

// A safetensors checkpoint with its data_md5 and header_md5 recomputed, where its header still parses.
Bytes with_fresh_digests(const Bytes& file) {
  if (file.size() < 8) return file;
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | file[size_t(i)];
  if (n > file.size() - 8) return file;
  nlohmann::json header = nlohmann::json::parse(file.begin() + 8, file.begin() + 8 + long(n), nullptr, false);
  if (!header.is_object() || !header.contains("__metadata__") || !header["__metadata__"].is_object())
    return file;
  const std::string buffer(file.begin() + 8 + long(n), file.end());
  auto& meta = header["__metadata__"];
  meta["data_md5"] = translution::md5_hex(buffer.data(), buffer.size());
  meta.erase("header_md5");
  const std::string unsigned_text = header.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  meta["header_md5"] = translution::md5_hex(unsigned_text.data(), unsigned_text.size());
  const std::string text = header.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  Bytes out(8);
  for (int i = 0; i < 8; ++i) out[size_t(i)] = (unsigned char)((text.size() >> (8 * i)) & 0xff);
  out.insert(out.end(), text.begin(), text.end());
  out.insert(out.end(), buffer.begin(), buffer.end());
  return out;
}

Bytes text_bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

// Pickles past each limit of the pickle reader (io/state_dict_pickle.h), megabytes each.
std::vector<Bytes> pickle_bombs() {
  std::string memo = "\x80\x02N";
  for (uint32_t i = 0; i <= 1000000; ++i) memo += "r" + std::string(reinterpret_cast<const char*>(&i), 4);
  return {text_bytes("\x80\x02" + repeat("]", 999000) + repeat("a", 998999) + "."),  // lists 999,000 deep
          text_bytes("\x80\x02" + repeat("(", 1000001) + "."),                       // the stack
          text_bytes("\x80\x02]" + repeat("Na", 1000001) + "."),                     // one container
          text_bytes(memo + "."),                                                    // the memo
          text_bytes("\x80\x02}" + repeat(")b", 2000001) + ".")};                    // the values
}

// Checkpoints past the reader's limits: a JSON header nested a million deep, a header length past the file.
std::vector<Bytes> checkpoint_bombs() {
  std::vector<Bytes> out;
  for (const std::string& header :
       {"{\"a\":" + repeat("[", 1000000) + repeat("]", 1000000) + "}",
        "{\"a\":" + repeat("{\"b\":", 100000) + "1" + repeat("}", 100000) + "}"}) {
    Bytes b(8);
    for (int i = 0; i < 8; ++i) b[size_t(i)] = (unsigned char)((header.size() >> (8 * i)) & 0xff);
    b.insert(b.end(), header.begin(), header.end());
    out.push_back(b);
  }
  out.push_back(Bytes{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, '{', '}'});
  return out;
}

struct Reader {
  std::string name;
  std::function<void(const Bytes&)> parse;
  std::function<Bytes(const Bytes&)> resign = {};        // where set, applied to half the inputs
  int64_t max_inputs = INT64_MAX;                        // fewer for a reader whose inputs are slow to reject
  std::function<std::vector<Bytes>()> built_seeds = {};  // seeds made here instead of SEED_DIR/name's
};

struct Counts {
  int64_t inputs = 0, accepted = 0, rejected = 0, failures = 0;
};

// A reader that accepted an input it should not have: what it returned breaks its own contract.
struct BrokenPromise : std::logic_error {
  using std::logic_error::logic_error;
};

Counts fuzz(const Reader& r, const std::vector<Bytes>& seeds, int64_t inputs, double seconds, uint64_t seed,
            const fs::path& out) {
  std::mt19937_64 rng(seed);
  Counts c;
  const auto start = std::chrono::steady_clock::now();
  while (c.inputs < inputs &&
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
    Bytes b = seeds[rng() % seeds.size()];
    if (rng() % 8 == 0 && seeds.size() > 1) {  // splice two seeds
      const Bytes& other = seeds[rng() % seeds.size()];
      b.resize(rng() % (b.size() + 1));
      b.insert(b.end(), other.begin() + long(rng() % (other.size() + 1)), other.end());
    }
    for (int edits = 1 + int(rng() % 4); edits > 0; --edits) mutate_once(b, rng);
    if (r.resign && rng() % 2) b = r.resign(b);
    ++c.inputs;
    try {
      r.parse(b);
      ++c.accepted;
    } catch (const std::bad_alloc&) {
      ++c.failures;
      const fs::path saved = out / (r.name + "-" + std::to_string(c.inputs) + ".bad_alloc");
      std::ofstream(saved, std::ios::binary)
          .write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
      std::fprintf(stderr, "%s: input %lld allocated beyond the limit (saved %s)\n", r.name.c_str(),
                   (long long)c.inputs, saved.c_str());
    } catch (const BrokenPromise& e) {
      ++c.failures;
      const fs::path saved = out / (r.name + "-" + std::to_string(c.inputs) + ".broken");
      std::ofstream(saved, std::ios::binary)
          .write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
      std::fprintf(stderr, "%s: input %lld was accepted but %s (saved %s)\n", r.name.c_str(),
                   (long long)c.inputs, e.what(), saved.c_str());
    } catch (const std::exception&) {
      ++c.rejected;  // a one-line error for the user: what a reader should do with a bad file
    }
  }
  return c;
}

// Accepted means every value is a tensor.
void accept_state_dict(const std::vector<std::pair<std::string, at::Tensor>>& tensors) {
  for (const auto& [key, t] : tensors)
    if (!t.defined()) throw BrokenPromise("'" + key + "' is no tensor");
}

// Accepted means every leaf a tensor leaf says it is holds one.
void accept_module(const std::vector<std::pair<std::string, translution::PickledLeaf>>& leaves) {
  for (const auto& [path, leaf] : leaves)
    if (leaf.kind == translution::PickledLeaf::Kind::Tensor && !leaf.tensor.defined())
      throw BrokenPromise("'" + path + "' is no tensor");
}

// Accepted means loadable as a model: every weight finite.
void accept_checkpoint(const translution::Checkpoint& c) {
  for (const auto& p : c.model->named_parameters())
    if (!translution::non_finite_value(p.value()).empty())
      throw BrokenPromise("'" + p.key() + "' is not finite");
}

// The pickle alone (a zip's CRCs would turn most mutations away before it), as a state dict and as a
// LibTorch module: every storage 4 KB of zeros.
void parse_pickle(const Bytes& b) {
  const std::vector<char> pickle(b.begin(), b.end());
  const auto storage = [](const std::string&) { return std::vector<char>(4096, 0); };
  try {
    accept_state_dict(translution::unpickle_state_dict(pickle, storage));
    return;
  } catch (const translution::Error&) {
  }
  accept_module(translution::unpickle_module(pickle, storage));
}

std::vector<Reader> readers() {
  return {
      {"idx",
       [](const Bytes& b) {
         // Accepted means whole: exactly the elements the header declares (no read past the file's end).
         const translution::IdxArray a =
             translution::parse_idx(std::vector<uint8_t>(b.begin(), b.end()), "fuzz.idx");
         uint64_t count = 1;
         for (int64_t d : a.dims) count *= uint64_t(d);
         if (a.dims.empty() || count != a.data.size())
           throw BrokenPromise("holds " + std::to_string(a.data.size()) +
                               " elements where its header declares " + std::to_string(count));
       }},
      {"checkpoint",
       [](const Bytes& b) {
         accept_checkpoint(
             translution::parse_checkpoint(std::string(b.begin(), b.end()), "fuzz.ckpt", c10::kCPU));
       },
       with_fresh_digests},
      {"checkpoint_bombs",
       [](const Bytes& b) {
         translution::parse_checkpoint(std::string(b.begin(), b.end()), "fuzz.ckpt", c10::kCPU);
       },
       nullptr, 400, checkpoint_bombs},
      {"format1",
       [](const Bytes& b) {
         accept_checkpoint(
             translution::parse_format1_checkpoint(std::string(b.begin(), b.end()), "fuzz.ckpt"));
       },
       with_fresh_format1_header, 5000},
      {"image", [](const Bytes& b) { translution::decode_image_gray(b, "fuzz.png"); }},
      {"state_dict",
       [](const Bytes& b) {
         accept_state_dict(translution::parse_state_dict(std::vector<char>(b.begin(), b.end()), "fuzz.pt"));
       },
       nullptr, 5000},
      {"pickle", parse_pickle},
      // A few hundred milliseconds each: a few dozen inputs.
      {"pickle_bombs", parse_pickle, nullptr, 40, pickle_bombs},
      {"config",
       [](const Bytes& b) {
         const std::string text(b.begin(), b.end());
         try {
           translution::ViTConfig::from_text(text).validate();
         } catch (const std::bad_alloc&) {
           throw;  // a failure, reported by the caller
         } catch (const std::exception&) {
         }
         translution::TrainConfig::from_text(text).validate();
       }},
  };
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: fuzz_readers SEED_DIR [--inputs N] [--seconds S] [--seed K] [--out DIR]\n");
    return 2;
  }
  const fs::path seeds_dir = argv[1];
  int64_t inputs = 20000;
  double seconds = 15;
  uint64_t seed = 1;
  fs::path out = fs::temp_directory_path();
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--inputs")
      inputs = std::stoll(value);
    else if (key == "--seconds")
      seconds = std::stod(value);
    else if (key == "--seed")
      seed = std::stoull(value);
    else if (key == "--out")
      out = value;
  }
  // Allocation beyond 4 GiB of address space fails with std::bad_alloc instead of taking the machine.
  const rlimit limit{rlim_t(4) << 30, rlim_t(4) << 30};
  setrlimit(RLIMIT_AS, &limit);
  int failures = 0;
  for (const Reader& r : readers()) {
    std::vector<Bytes> seeds;
    if (r.built_seeds)
      seeds = r.built_seeds();
    else
      for (const auto& entry : fs::directory_iterator(seeds_dir / r.name))
        seeds.push_back(read_file(entry.path()));
    if (seeds.empty()) {
      std::fprintf(stderr, "%s: no seeds in %s\n", r.name.c_str(), (seeds_dir / r.name).c_str());
      return 2;
    }
    const int64_t wanted = std::min(inputs, r.max_inputs);
    const Counts c = fuzz(r, seeds, wanted, seconds, seed, out);
    std::fflush(stdout);
    std::printf("%-10s %lld inputs: %lld accepted, %lld rejected with an error, %lld failures\n",
                r.name.c_str(), (long long)c.inputs, (long long)c.accepted, (long long)c.rejected,
                (long long)c.failures);
    if (c.inputs < wanted) {
      std::printf("%-10s only %lld of %lld inputs ran within %.0f s\n", r.name.c_str(), (long long)c.inputs,
                  (long long)wanted, seconds);
      ++failures;
    }
    failures += int(c.failures);
  }
  return failures == 0 ? 0 : 1;
}
