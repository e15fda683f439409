#pragma once
// Numbers the Linux kernel reports as text: "key value" files (/proc/meminfo,
// /proc/self/status, a cgroup's memory.stat) and files holding one number (a
// cgroup's memory.max). Missing files, keys and words that are not numbers all
// read as -1, so a caller can treat "unknown" as "no limit" in one comparison.
#include <string>

namespace translution {

// The number after the word `key` ("MemAvailable:", "VmRSS:", "active_file") in
// `file`, times `unit` (1024 for the kB of /proc); -1 where the file or key is missing.
double keyed_number(const std::string& file, const std::string& key, double unit = 1);

// The one number `file` holds; -1 where it is missing or says "max" (cgroup v2's none).
double number_in(const std::string& file);

}  // namespace translution
