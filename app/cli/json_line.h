#pragma once
// The commands' --json output: one object a line. A file name or a metadata value
// that is not UTF-8 (a name is bytes on Linux) is written with U+FFFD in place of
// each bad byte, rather than throwing once the work is done.
#include <string>

#include <nlohmann/json.hpp>

namespace translution::cli {

template <class Json>
std::string json_line(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace translution::cli
