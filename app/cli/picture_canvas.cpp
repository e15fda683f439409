#include "cli/picture_canvas.h"

#include <cstdio>

#include "image/digit_preparation.h"
#include "image/image_file.h"
#include "util/error.h"

namespace translution::cli {

Placement parse_at(const std::string& text, int64_t canvas) {
  const int64_t limit = canvas - 28;
  if (text.empty()) return {limit / 2, limit / 2};
  long long x = 0, y = 0;
  char extra = 0;
  if (std::sscanf(text.c_str(), "%lld,%lld%c", &x, &y, &extra) != 2)
    throw Error("--at expects X,Y (the digit frame's top-left pixel), got '" + text + "'");
  if (x < 0 || y < 0 || x > limit || y > limit)
    throw Error("--at " + text + " puts the 28x28 digit outside the " + std::to_string(canvas) + "x" +
                std::to_string(canvas) + " canvas (X and Y must be 0.." + std::to_string(limit) + ")");
  return {x, y};
}

at::Tensor read_digit(const std::string& path) {
  try {
    return prepare_digit(read_image_gray(path));
  } catch (const Error& e) {  // the reader names the file; the preparation does not
    const std::string message = e.what();
    throw Error(message.find(path) == std::string::npos ? path + ": " + message : message);
  }
}

}  // namespace translution::cli
