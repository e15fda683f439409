#pragma once
// How much of the CPU the hypervisor took away while something ran.
//
// On a shared virtual machine the same benchmark can vary widely from one minute
// to the next (docs/performance.md, "Reading the figures"). Linux counts the time
// a vCPU was ready but its physical core was serving another guest as "steal"
// (/proc/stat). A benchmark row that says how much was stolen while it ran can be
// read for what it is.
#include <cstdint>
#include <optional>
#include <string>

namespace translution {

// The first ("cpu", all CPUs) line of /proc/stat, in its clock ticks.
struct CpuTimes {
  uint64_t total = 0;  // user + nice + system + idle + iowait + irq + softirq + steal
  uint64_t steal = 0;
};

// Parses /proc/stat's text; throws Error naming what is missing or malformed.
// A kernel too old to count steal (fewer than 8 fields) reads as steal 0.
CpuTimes parse_cpu_times(const std::string& proc_stat);

// This machine's counters now; nothing where /proc/stat cannot be read
// (not Linux, or a sandbox without /proc).
std::optional<CpuTimes> read_cpu_times();

// Stolen share of all CPU time between two readings, in [0, 1]; -1 when
// either reading is missing or no time passed (less than a clock tick, 10 ms
// of CPU time on most kernels: too short to count).
double steal_fraction(const std::optional<CpuTimes>& before, const std::optional<CpuTimes>& after);

}  // namespace translution
