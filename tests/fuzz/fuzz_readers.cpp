// A seeded mutation fuzzer for the readers of untrusted input: the IDX reader,
// the checkpoint reader, the PNG/JPEG reader and the config text parsers. Each
// reader gets mutated copies of its seeds (tests/fuzz/seeds/READER/): bit flips,
// byte overwrites with boundary values, truncation, insertion, duplication and
// splices. A reader may accept an input or reject it with an exception; it may
// not crash (the process would die), hang (ctest's timeout) or allocate beyond
// the address-space limit set here (std::bad_alloc counts as a failure, and the
// input is saved for a look).
//
// A checkpoint's header carries its payload's size and MD5, so every damaged
// file stops there. With --fresh-headers, half of the checkpoint inputs get a
// header recomputed for their mutated payload and reach LibTorch's archive
// reader behind the check: a payload crafted that way can crash LibTorch 1.13's
// TorchScript importer (a segmentation fault in ScriptTypeParser, found by this
// fuzzer), which a checkpoint format without TorchScript code would avoid.
// CI runs without it.
//
// usage: fuzz_readers SEED_DIR [--inputs N] [--seconds S] [--seed K] [--out DIR] [--fresh-headers 1]
#include <sys/resource.h>

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

#include "data/idx_file.h"
#include "image/image_file.h"
#include "io/state_dict_file.h"
#include "io/state_dict_pickle.h"
#include "nn/vit_config.h"
#include "train/checkpoint.h"
#include "train/train_config.h"
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
      if (!b.empty()) b[rng() % 2 ? pick(std::min<size_t>(b.size(), 64)) : pick(b.size())] = boundary[rng() % 6];
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
Bytes with_fresh_header(const Bytes& checkpoint) {
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

struct Reader {
  std::string name;
  std::function<void(const Bytes&)> parse;
  bool fresh_headers = false;  // checkpoints with --fresh-headers: half the inputs get a valid header
  int64_t max_inputs = INT64_MAX;  // fewer for a reader whose rejections are slow
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
    if (r.fresh_headers && rng() % 2) b = with_fresh_header(b);
    ++c.inputs;
    try {
      r.parse(b);
      ++c.accepted;
    } catch (const std::bad_alloc&) {
      ++c.failures;
      const fs::path saved = out / (r.name + "-" + std::to_string(c.inputs) + ".bad_alloc");
      std::ofstream(saved, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
      std::fprintf(stderr, "%s: input %lld allocated beyond the limit (saved %s)\n", r.name.c_str(),
                   (long long)c.inputs, saved.c_str());
    } catch (const BrokenPromise& e) {
      ++c.failures;
      const fs::path saved = out / (r.name + "-" + std::to_string(c.inputs) + ".broken");
      std::ofstream(saved, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
      std::fprintf(stderr, "%s: input %lld was accepted but %s (saved %s)\n", r.name.c_str(), (long long)c.inputs,
                   e.what(), saved.c_str());
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

std::vector<Reader> readers(bool fresh_headers) {
  return {
      {"idx",
       [](const Bytes& b) {
         // Accepted means whole: exactly the elements the header declares (no read past the file's end).
         const translution::IdxArray a = translution::parse_idx(std::vector<uint8_t>(b.begin(), b.end()), "fuzz.idx");
         uint64_t count = 1;
         for (int64_t d : a.dims) count *= uint64_t(d);
         if (a.dims.empty() || count != a.data.size())
           throw BrokenPromise("holds " + std::to_string(a.data.size()) + " elements where its header declares " +
                               std::to_string(count));
       }},
      {"checkpoint",
       [](const Bytes& b) { translution::parse_checkpoint(std::string(b.begin(), b.end()), "fuzz.ckpt", c10::kCPU); },
       fresh_headers},
      {"image", [](const Bytes& b) { translution::decode_image_gray(b, "fuzz.png"); }},
      // LibTorch's zip reader rejects with an error that records a stack trace (about 1 ms each): 5,000 inputs.
      {"state_dict",
       [](const Bytes& b) { accept_state_dict(translution::parse_state_dict(std::vector<char>(b.begin(), b.end()), "fuzz.pt")); },
       false, 5000},
      {"pickle",
       [](const Bytes& b) {
         // The pickle alone (a zip's CRCs would turn most mutations away before it): every storage 4 KB of zeros.
         accept_state_dict(translution::unpickle_state_dict(std::vector<char>(b.begin(), b.end()),
                                                            [](const std::string&) { return std::vector<char>(4096, 0); }));
       }},
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
  bool fresh_headers = false;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--inputs") inputs = std::stoll(value);
    else if (key == "--seconds") seconds = std::stod(value);
    else if (key == "--seed") seed = std::stoull(value);
    else if (key == "--out") out = value;
    else if (key == "--fresh-headers") fresh_headers = value == "1";
  }
  // Allocation beyond 4 GiB of address space fails with std::bad_alloc instead of taking the machine.
  const rlimit limit{rlim_t(4) << 30, rlim_t(4) << 30};
  setrlimit(RLIMIT_AS, &limit);
  int failures = 0;
  for (const Reader& r : readers(fresh_headers)) {
    std::vector<Bytes> seeds;
    for (const auto& entry : fs::directory_iterator(seeds_dir / r.name)) seeds.push_back(read_file(entry.path()));
    if (seeds.empty()) {
      std::fprintf(stderr, "%s: no seeds in %s\n", r.name.c_str(), (seeds_dir / r.name).c_str());
      return 2;
    }
    const int64_t wanted = std::min(inputs, r.max_inputs);
    const Counts c = fuzz(r, seeds, wanted, seconds, seed, out);
    std::fflush(stdout);
    std::printf("%-10s %lld inputs: %lld accepted, %lld rejected with an error, %lld failures\n", r.name.c_str(),
                (long long)c.inputs, (long long)c.accepted, (long long)c.rejected, (long long)c.failures);
    if (c.inputs < wanted) {
      std::printf("%-10s only %lld of %lld inputs ran within %.0f s\n", r.name.c_str(), (long long)c.inputs,
                  (long long)wanted, seconds);
      ++failures;
    }
    failures += int(c.failures);
  }
  return failures == 0 ? 0 : 1;
}
