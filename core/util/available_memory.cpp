#include "util/available_memory.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <sched.h>
#include <sys/resource.h>

#ifdef TRANSLUTION_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#endif

#include "util/device.h"
#include "util/error.h"
#include "util/kernel_numbers.h"

namespace translution {
namespace {

// The override, or -1 when it is not set.
double override_bytes() {
  const char* text = std::getenv("TRANSLUTION_AVAILABLE_MEMORY");
  if (!text || !*text) return -1;
  // Plain decimal bytes ("8e9", "8000000000"): strtod alone would take hex and "-0" too.
  if (std::string(text).find_first_not_of("0123456789.eE+") != std::string::npos)
    throw Error(std::string("TRANSLUTION_AVAILABLE_MEMORY must be a number of bytes, got '") + text + "'");
  char* end = nullptr;
  errno = 0;
  const double bytes = std::strtod(text, &end);
  // Beyond a double (1e400) strtod gives infinity with ERANGE: no device has that.
  if (*end != '\0' || errno == ERANGE || !std::isfinite(bytes) || !(bytes >= 0))
    throw Error(std::string("TRANSLUTION_AVAILABLE_MEMORY must be a number of bytes, got '") + text + "'");
  return bytes;
}

// The least of two headrooms, -1 standing for none.
double least(double a, double b) { return a < 0 ? b : b < 0 ? a : std::min(a, b); }

// What one cgroup still allows: its limit less what it uses, the file cache in that use
// (active and inactive, as MemAvailable counts it) being reclaimable. -1 where it sets no
// limit. cgroup v1 says "none" with a limit near 2^63.
double cgroup_level_headroom(const std::string& dir, bool v1) {
  const double limit = number_in(dir + (v1 ? "/memory.limit_in_bytes" : "/memory.max"));
  if (limit < 0 || limit >= 0x1p62) return -1;
  const double usage = number_in(dir + (v1 ? "/memory.usage_in_bytes" : "/memory.current"));
  const std::string stat = dir + "/memory.stat", prefix = v1 ? "total_" : "";
  const double cache = std::max(0.0, keyed_number(stat, prefix + "active_file")) +
                       std::max(0.0, keyed_number(stat, prefix + "inactive_file"));
  return std::max(0.0, limit - std::max(0.0, usage - cache));
}

// Address space libraries take beyond what they touch, which the estimates (resident memory)
// leave out: OpenBLAS maps a 128 MiB work buffer for each thread that calls it, and waits
// forever, not failing, when it cannot. (In a process that has run already, some may be
// mapped, and so counted twice: the check errs towards refusing, which --force overrides.)
constexpr double kBlasBufferBytes = 128.0 * 1024 * 1024;

// The cores this process may run on (taskset, a cpuset), each a thread that may call BLAS.
int usable_cores() {
  cpu_set_t cores;
  CPU_ZERO(&cores);
  if (::sched_getaffinity(0, sizeof cores, &cores) == 0 && CPU_COUNT(&cores) > 0) return CPU_COUNT(&cores);
  return int(std::max(1u, std::thread::hardware_concurrency()));
}

// The process's address-space limit (ulimit -v) less the address space it holds and, for a
// run that multiplies matrices, its BLAS buffers; -1 where there is no limit.
double address_space_headroom(bool computes) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return -1;
  const double held = double(std::max<int64_t>(0, address_space_bytes()));
  const double buffers = computes ? kBlasBufferBytes * usable_cores() : 0;
  return std::max(0.0, double(limit.rlim_cur) - held - buffers);
}

#ifdef TRANSLUTION_WITH_CUDA
double cuda_free_bytes(const c10::Device& device) {
  const c10::DeviceIndex index = device.has_index() ? device.index() : c10::DeviceIndex(0);
  const c10::cuda::CUDAGuard guard(index);
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
    (void)cudaGetLastError();  // clears the error, which LibTorch's next call would otherwise report
    return -1;
  }
  // What LibTorch's allocator holds but does not use is free to this process too.
  // Its statistics exist once it has allocated on the device: before, LibTorch 2
  // throws ("Invalid device argument 0: did you call init?"), and nothing is held.
  double cached = 0;
  try {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(index);
    // Element 0 is the aggregate in every version (util/device.cpp says the same).
    cached = double(stats.reserved_bytes.front().current - stats.allocated_bytes.front().current);
  } catch (const std::exception&) {
  }
  return double(free) + cached;
}
#endif

// The tightest of what the machine has free, what the process's cgroups allow and its
// address-space limit, named by where it came from.
AvailableMemory cpu_available_memory(bool computes) {
  AvailableMemory a{keyed_number("/proc/meminfo", "MemAvailable:", 1024), "MemAvailable"};
  const auto tighter = [&](double bytes, const char* source, bool per_process = false) {
    if (bytes >= 0 && (a.bytes < 0 || bytes < a.bytes)) a = {bytes, source, per_process};
  };
  std::ifstream membership_file("/proc/self/cgroup");
  std::stringstream membership;
  membership << membership_file.rdbuf();
  tighter(cgroup_headroom_bytes("/sys/fs/cgroup", membership.str()), "the cgroup's memory limit");
  tighter(address_space_headroom(computes), "ulimit -v", true);
  return a;
}

}  // namespace

double cgroup_headroom_bytes(const std::string& root, const std::string& membership) {
  double headroom = -1;
  std::istringstream lines(membership);
  std::string line;
  while (std::getline(lines, line)) {
    // "id:controllers:path": v2's one line has no controllers, v1's memory line names "memory".
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    const bool v1 = ("," + controllers + ",").find(",memory,") != std::string::npos;
    if (!v1 && !controllers.empty()) continue;
    if (path.empty() || path[0] != '/' || path.find("/..") != std::string::npos) continue;
    // A limit anywhere above the process binds it too, except, in v1, above a level whose
    // memory.use_hierarchy is 0: its children are not charged to it. (A missing file is the
    // kernels that are always hierarchical.)
    const auto dir_of = [&](const std::string& p) {
      return root + (v1 ? "/memory" : "") + (p == "/" ? "" : p);
    };
    for (;;) {
      headroom = least(headroom, cgroup_level_headroom(dir_of(path), v1));
      if (path == "/") break;
      path = path.substr(0, std::max<size_t>(1, path.rfind('/')));
      if (v1 && number_in(dir_of(path) + "/memory.use_hierarchy") == 0) break;
    }
  }
  return headroom;
}

AvailableMemory available_memory(const c10::Device& device, bool computes) {
  if (const double bytes = override_bytes(); bytes >= 0) return {bytes, "TRANSLUTION_AVAILABLE_MEMORY"};
  if (device.is_cpu()) return cpu_available_memory(computes);
#ifdef TRANSLUTION_WITH_CUDA
  if (device.is_cuda()) return {cuda_free_bytes(device), "free on " + device.str()};
#endif
  return {};
}

}  // namespace translution
