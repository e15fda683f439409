#include "cpu/kernel_observer.h"

namespace translution {
namespace {

thread_local KernelCounts* t_counts = nullptr;

}  // namespace

KernelCounts::KernelCounts() : before_(t_counts) { t_counts = this; }
KernelCounts::~KernelCounts() { t_counts = before_; }

void report_kernel(Kernel kernel) {
  if (t_counts) ++t_counts->counts_[int(kernel)];
}

}  // namespace translution
