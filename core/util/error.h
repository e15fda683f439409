#pragma once
// One exception type for everything the user can get wrong (files, values,
// configurations). Front ends print what() as is, so messages name the file or
// value and say what is wrong.
#include <stdexcept>
#include <string>

namespace translution {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace translution
