#include "util/autocast_scope.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include "util/error.h"

namespace translution {
namespace {

// LibTorch 2.4 names the device in one call; before, each device had calls of its own.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool enabled(c10::DeviceType d) { return at::autocast::is_autocast_enabled(d); }
void set_enabled(c10::DeviceType d, bool on) { at::autocast::set_autocast_enabled(d, on); }
c10::ScalarType dtype(c10::DeviceType d) { return at::autocast::get_autocast_dtype(d); }
void set_dtype(c10::DeviceType d, c10::ScalarType t) { at::autocast::set_autocast_dtype(d, t); }
#else
bool enabled(c10::DeviceType d) {
  return d == c10::DeviceType::CPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled();
}
void set_enabled(c10::DeviceType d, bool on) {
  if (d == c10::DeviceType::CPU)
    at::autocast::set_cpu_enabled(on);
  else
    at::autocast::set_enabled(on);
}
c10::ScalarType dtype(c10::DeviceType d) {
  return d == c10::DeviceType::CPU ? at::autocast::get_autocast_cpu_dtype()
                                   : at::autocast::get_autocast_gpu_dtype();
}
void set_dtype(c10::DeviceType d, c10::ScalarType t) {
  if (d == c10::DeviceType::CPU)
    at::autocast::set_autocast_cpu_dtype(t);
  else
    at::autocast::set_autocast_gpu_dtype(t);
}
#endif

}  // namespace

AutocastScope::AutocastScope(c10::DeviceType device, c10::ScalarType dtype_in) : device_(device) {
  if (device != c10::DeviceType::CPU && device != c10::DeviceType::CUDA)
    throw Error("internal: autocast runs on the CPU or CUDA, not " + c10::DeviceTypeName(device));
  was_enabled_ = enabled(device);
  previous_dtype_ = dtype(device);
  set_enabled(device, true);
  set_dtype(device, dtype_in);
  at::autocast::increment_nesting();
}

at::Tensor autocast_input(const at::Tensor& input) {
  if (!input.defined() || !input.is_floating_point()) return input;
  const c10::DeviceType device = input.device().type();
  if ((device != c10::DeviceType::CPU && device != c10::DeviceType::CUDA) || !enabled(device)) return input;
  return input.to(dtype(device));
}

AutocastScope::~AutocastScope() {
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_enabled(device_, was_enabled_);
  set_dtype(device_, previous_dtype_);
}

}  // namespace translution
