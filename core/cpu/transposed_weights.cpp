#include "cpu/transposed_weights.h"

#include <atomic>
#include <iterator>
#include <mutex>
#include <unordered_map>

#include <ATen/ATen.h>
#include <c10/util/intrusive_ptr.h>

#include "cpu/weight_stamp.h"

namespace translution {
namespace {

// Weak references only: neither a weight nor its memory is kept alive by the
// cache, yet neither address can be reused by another while its entry exists.
struct Entry {
  c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> weight;
  WeightStamp stamp;  // the weight's state when copied
  at::Tensor transposed;
};

// The cache outlives every thread that may still call it at exit (never destroyed).
struct Cache {
  std::mutex mutex;
  std::unordered_map<const c10::TensorImpl*, Entry> entries;
};
Cache& cache() {
  static Cache* c = new Cache;
  return *c;
}
std::atomic<int64_t> g_made{0};

bool copyable(const at::Tensor& w) {
  return w.defined() && w.is_cpu() && !w.is_inference() && w.scalar_type() == at::kFloat && w.dim() == 2 &&
         w.is_contiguous() && w.size(0) > 0 && w.size(0) % kWeightStrip == 0;
}

bool current(const Entry& e, const at::Tensor& w) {
  return copyable(w) && e.stamp.matches(w) && e.transposed.size(0) * kWeightStrip == w.size(0) &&
         e.transposed.size(1) == w.size(1);
}

// Drops the copies of weights that are gone or have changed since.
void sweep(std::unordered_map<const c10::TensorImpl*, Entry>& entries) {
  for (auto e = entries.begin(); e != entries.end();) {
    auto weight = e->second.weight.lock();
    const bool keep = weight && current(e->second, at::Tensor(std::move(weight)));
    e = keep ? std::next(e) : entries.erase(e);
  }
}

}  // namespace

at::Tensor transposed_weight(const at::Tensor& w) {
  if (!copyable(w)) return at::Tensor();
  const c10::TensorImpl* key = w.unsafeGetTensorImpl();
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto it = c.entries.find(key);
  if (it != c.entries.end() && current(it->second, w)) return it->second.transposed;
  sweep(c.entries);  // (this weight's stale copy among them)
  at::NoGradGuard no_grad;
  Entry entry{
      c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(w.getIntrusivePtr()), WeightStamp(w),
      w.detach().view({w.size(0) / kWeightStrip, kWeightStrip, w.size(1)}).transpose(1, 2).contiguous()};
  ++g_made;
  at::Tensor transposed = entry.transposed;
  c.entries.erase(key);
  c.entries.emplace(key, std::move(entry));
  return transposed;
}

int64_t transposed_weights_cached() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return int64_t(c.entries.size());
}

int64_t transposed_weights_made() { return g_made; }

}  // namespace translution
