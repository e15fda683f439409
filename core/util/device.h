#pragma once
// Choosing a device, and the peak-memory counters the benchmarks report.
#include <cstdint>
#include <string>

#include <c10/core/Device.h>

namespace translution {

// "auto" (CUDA when available, else CPU), "cpu", "cuda" or "cuda:N".
// Throws translution::Error when CUDA is asked for and not there.
c10::Device parse_device(const std::string& name);
bool cuda_available();
std::string device_description(const c10::Device& device);

// Peak memory since the last reset: resident set on CPU (Linux VmHWM), the
// caching allocator's peak on CUDA. Returns -1 where it cannot be measured.
void reset_peak_memory(const c10::Device& device);
int64_t peak_memory_bytes(const c10::Device& device);
void synchronize(const c10::Device& device);

// Uses every core for LibTorch's intra-op threads unless OMP_NUM_THREADS says
// otherwise (some OpenMP runtimes start with one thread in containers).
void configure_threads();

}  // namespace translution
