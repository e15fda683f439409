#include "util/cpu_steal.h"

#include <fstream>
#include <sstream>

#include "util/error.h"

namespace translution {

CpuTimes parse_cpu_times(const std::string& proc_stat) {
  std::istringstream lines(proc_stat);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string name;
    fields >> name;
    if (name != "cpu") continue;
    // user nice system idle iowait irq softirq steal [guest guest_nice]: guest
    // time is already inside user and nice, so only the first eight add up.
    uint64_t value[8] = {};
    int count = 0;
    while (count < 8 && fields >> value[count]) ++count;
    if (count < 4)
      throw Error("/proc/stat: the 'cpu' line has " + std::to_string(count) +
                  " numeric fields, expected at least 4 (user nice system idle ...): '" + line + "'");
    CpuTimes t;
    for (int i = 0; i < count; ++i) t.total += value[i];
    t.steal = count >= 8 ? value[7] : 0;
    return t;
  }
  throw Error("/proc/stat: no 'cpu' line with the machine's total CPU times");
}

std::optional<CpuTimes> read_cpu_times() {
  std::ifstream file("/proc/stat");
  if (!file) return std::nullopt;
  std::ostringstream text;
  text << file.rdbuf();
  try {
    return parse_cpu_times(text.str());
  } catch (const Error&) {
    return std::nullopt;  // a benchmark runs on without this figure
  }
}

double steal_fraction(const std::optional<CpuTimes>& before, const std::optional<CpuTimes>& after) {
  if (!before || !after || after->total <= before->total || after->steal < before->steal) return -1;
  return double(after->steal - before->steal) / double(after->total - before->total);
}

}  // namespace translution
