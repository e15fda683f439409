#include "util/kernel_numbers.h"

#include <fstream>

namespace translution {

double keyed_number(const std::string& file, const std::string& key, double unit) {
  std::ifstream in(file);
  std::string word;
  while (in >> word) {
    if (word == key) {
      double value = -1;  // a failed read stores 0, which would pass for a real figure
      return (in >> value) && value >= 0 ? value * unit : -1;
    }
    std::getline(in, word);  // the rest of this line: keys start lines
  }
  return -1;
}

double number_in(const std::string& file) {
  std::ifstream in(file);
  double value = -1;
  return (in >> value) && value >= 0 ? value : -1;
}

}  // namespace translution
