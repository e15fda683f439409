#pragma once
// Safetensors, the weight format of Hugging Face's safetensors library, which
// Python reads with safetensors.torch.load_file: an 8-byte little-endian header
// length N, N bytes of JSON (per tensor: "dtype", "shape" and "data_offsets"
// [begin, end) into the buffer after the header; "__metadata__": string -> string),
// then the tensors' raw little-endian bytes. Nothing in such a file is code:
// reading it runs no deserializer, and every size is checked before data is read.
//
// The writer adds two digests to the metadata: "data_md5", of the buffer, and
// "header_md5", of the header's JSON in canonical form (nlohmann's dump, keys
// sorted) without "header_md5" itself. The reader checks each one present, so
// damage is named as damage to the header or to the tensors.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "io/byte_source.h"

namespace translution {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// The header's bound: a checkpoint's header holds about 150 bytes a tensor, so
// 16 MB is some 100,000 tensors; a parsed header takes a few times its size.
constexpr uint64_t kMaxSafetensorsHeader = uint64_t(16) << 20;
// The JSON's nesting bound: a header nests three deep.
constexpr int kMaxSafetensorsDepth = 64;
constexpr size_t kMaxSafetensorsRank = 32;
// The tensors a header may list (its bytes allow some 100,000) and the fields of its
// __metadata__ (a checkpoint writes about twenty).
constexpr uint64_t kMaxSafetensorsTensors = uint64_t(1) << 17;
constexpr uint64_t kMaxSafetensorsMetadata = 4096;

struct SafetensorsEntry {
  std::string name;
  at::ScalarType dtype = at::kFloat;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // in the buffer
};

struct SafetensorsHeader {
  std::map<std::string, std::string> metadata;
  std::vector<SafetensorsEntry> entries;  // by offset; they tile the buffer
  uint64_t buffer_offset = 0;             // 8 + N
  uint64_t buffer_bytes = 0;
};

// Checks the structure, then the header's digest where present. Throws
// translution::Error naming the source and what is wrong: the header length,
// the JSON (or its depth), an unknown dtype, a shape whose size overflows,
// offsets out of order, overlapping, past the buffer or leaving a gap, the
// buffer longer or shorter than the header says.
SafetensorsHeader read_safetensors_header(const ByteSource& source);

// The tensors, in the header's offset order, each read straight into its own
// storage; checks "data_md5" where present.
NamedTensors read_safetensors_tensors(const ByteSource& source, const SafetensorsHeader& header);

// The file's bytes: tensors in the given order (CPU copies, contiguous) and the
// metadata with both digests added. Throws translution::Error for a dtype the
// format has no name for or a metadata key it reserves.
std::string safetensors_bytes(const NamedTensors& tensors,
                              const std::map<std::string, std::string>& metadata);

// "F32", "I64", ...; throws translution::Error for a dtype the format lacks.
std::string safetensors_dtype_name(at::ScalarType dtype);

}  // namespace translution
