#include "util/device.h"

#ifdef TRANSLUTION_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/cuda.h>

#ifdef TRANSLUTION_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include "util/error.h"
#include "util/kernel_numbers.h"

namespace translution {

bool cuda_available() { return torch::cuda::is_available(); }

c10::Device parse_device(const std::string& name) {
  if (name == "auto") return cuda_available() ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  if (name == "cpu") return c10::Device(c10::kCPU);
  if (name == "cuda" || name.rfind("cuda:", 0) == 0) {
    if (!cuda_available())
      throw Error("device '" + name + "' requested, but " +
                  std::string(torch::cuda::device_count() == 0 ? "no CUDA device is visible"
                                                               : "CUDA is unavailable") +
                  " (this LibTorch build " +
#ifdef TRANSLUTION_WITH_CUDA
                  "has CUDA)"
#else
                  "is CPU-only)"
#endif
      );
    const int index = name == "cuda" ? 0 : std::stoi(name.substr(5));
    if (index < 0 || index >= int(torch::cuda::device_count()))
      throw Error("device '" + name + "': only " + std::to_string(torch::cuda::device_count()) +
                  " CUDA device(s)");
    return c10::Device(c10::kCUDA, c10::DeviceIndex(index));
  }
  throw Error("unknown device '" + name + "' (expected auto, cpu, cuda or cuda:N)");
}

std::string device_description(const c10::Device& device) { return device.str(); }

ScopedTf32::ScopedTf32(bool on) : on_(on) {
  if (!on_) return;
  auto& context = at::globalContext();
  cublas_before_ = context.allowTF32CuBLAS();
  cudnn_before_ = context.allowTF32CuDNN();
  context.setAllowTF32CuBLAS(true);
  context.setAllowTF32CuDNN(true);
}

ScopedTf32::~ScopedTf32() {
  if (!on_) return;
  at::globalContext().setAllowTF32CuBLAS(cublas_before_);
  at::globalContext().setAllowTF32CuDNN(cudnn_before_);
}

void reset_peak_memory(const c10::Device& device) {
  if (device.is_cpu()) {
    std::ofstream("/proc/self/clear_refs") << "5";  // resets VmHWM to the current resident set
    return;
  }
#ifdef TRANSLUTION_WITH_CUDA
  c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
#endif
}

namespace {
// A "Vm...:" line of /proc/self/status (in kB) in bytes, or -1.
int64_t proc_status_bytes(const std::string& field) {
  return static_cast<int64_t>(keyed_number("/proc/self/status", field, 1024));
}
}  // namespace

int64_t resident_memory_bytes() { return proc_status_bytes("VmRSS:"); }

int64_t address_space_bytes() { return proc_status_bytes("VmSize:"); }

int64_t peak_memory_bytes(const c10::Device& device) {
  if (device.is_cpu()) return proc_status_bytes("VmHWM:");
#ifdef TRANSLUTION_WITH_CUDA
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
  // Element 0 is StatType::AGGREGATE in every version; the enum's namespace moved in 2.x.
  return stats.allocated_bytes.front().peak;
#else
  return -1;
#endif
}

namespace {
// OpenBLAS's thread count, where the build links it (Debian's LibTorch runs its
// products on that same library); elsewhere there is nothing to set.
void set_openblas_threads(int threads) {
#ifdef TRANSLUTION_HAVE_OPENBLAS
  openblas_set_num_threads(threads);
#else
  (void)threads;
#endif
}
}  // namespace

bool configure_concurrent_blas() {
  if (blas_threads() == 0) return false;  // no OpenBLAS in this build
  if (!blas_threads_from_environment()) set_openblas_threads(1);
  return true;
}

bool blas_threads_from_environment() {
  const char* t = std::getenv("OPENBLAS_NUM_THREADS");
  return t && *t;
}

bool cpu_has_avx512() {
#if defined(__x86_64__)
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
#else
  return false;
#endif
}

int blas_threads() {
#ifdef TRANSLUTION_HAVE_OPENBLAS
  return openblas_get_num_threads();
#else
  return 0;
#endif
}

ScopedBlasThreads::ScopedBlasThreads(int threads) {
  const int now = blas_threads();
  if (now > 0 && now != threads) {
    set_openblas_threads(threads);
    restore_ = now;
  }
}

ScopedBlasThreads::~ScopedBlasThreads() {
  if (restore_ > 0) set_openblas_threads(restore_);
}

EngineOptions start_process(ProcessModels models) {
  configure_threads();
  EngineOptions engine;
  if (models == ProcessModels::SideBySide) {
    configure_concurrent_blas();
    engine.matrix_threads = 1;
  }
  return engine;
}

void configure_threads() {
  const char* t = std::getenv("TRANSLUTION_THREADS");
  if (!t || !*t) return at::set_num_threads(1);
  // Up to four a core: more only queue, and each costs its stack and a join at exit.
  const long long most = 4 * std::max(1u, std::thread::hardware_concurrency());
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(t, &end, 10);
  if (*end != '\0' || errno == ERANGE || n < 1 || n > most)
    throw Error("TRANSLUTION_THREADS must be a whole number from 1 to " + std::to_string(most) +
                " (4 a core), got '" + std::string(t) + "'");
  at::set_num_threads(int(n));
}

void synchronize(const c10::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

}  // namespace translution
