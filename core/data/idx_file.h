#pragma once
// Reader for the IDX format MNIST ships in: a 4-byte magic (0, 0, element type,
// number of dimensions), big-endian uint32 dimensions, then the raw elements.
// Every structural promise the header makes is checked against the file before
// any element is read, so a bad file is an error naming it, never a crash.
#include <cstdint>
#include <string>
#include <vector>

namespace translution {

struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;  // unsigned bytes, row-major, product(dims) elements
};

// Reads an unsigned-byte IDX file: a regular file, its elements read only once its
// size is what its header declares. Throws translution::Error("<path>: <problem>").
IdxArray read_idx_file(const std::string& path);

// Same checks on bytes already in memory; `name` is used in error messages.
IdxArray parse_idx(const std::vector<uint8_t>& bytes, const std::string& name);

}  // namespace translution
