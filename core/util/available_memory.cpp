#include "util/available_memory.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>

#ifdef TRANSLUTION_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#endif

#include "util/error.h"

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

double mem_available_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  while (meminfo >> key) {
    if (key == "MemAvailable:") {
      double kb = -1;
      meminfo >> kb;
      return kb < 0 ? -1 : kb * 1024;
    }
    std::getline(meminfo, key);
  }
  return -1;
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

}  // namespace

AvailableMemory available_memory(const c10::Device& device) {
  if (const double bytes = override_bytes(); bytes >= 0) return {bytes, "TRANSLUTION_AVAILABLE_MEMORY"};
  if (device.is_cpu()) return {mem_available_bytes(), "MemAvailable"};
#ifdef TRANSLUTION_WITH_CUDA
  if (device.is_cuda()) return {cuda_free_bytes(device), "free on " + device.str()};
#endif
  return {};
}

}  // namespace translution
