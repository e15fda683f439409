#pragma once
// Which state of a weight a derived copy was made from (cpu/bf16_weights.h,
// cpu/transposed_weights.h): its memory, where it starts and its version counter.
// The copy is current while all three match: an in-place change (an optimizer
// step, a checkpoint loaded into it) moves the version, set_data replaces the
// memory. The memory is referenced weakly: the stamp keeps nothing alive, yet
// its address cannot be reused by other memory while the stamp exists.
#include <cstdint>

#include <ATen/core/Tensor.h>
#include <c10/util/intrusive_ptr.h>

namespace translution {

class WeightStamp {
 public:
  explicit WeightStamp(const at::Tensor& w)
      : storage_(w.storage().getWeakStorageImpl()), data_(w.data_ptr()), version_(int64_t(w._version())) {}

  // w is in the state this stamp recorded (w must not be an inference tensor).
  bool matches(const at::Tensor& w) const {
    return w.data_ptr() == data_ && storage_.lock().get() == w.storage().unsafeGetStorageImpl() &&
           int64_t(w._version()) == version_;
  }
  const void* data() const { return data_; }

 private:
  c10::weak_intrusive_ptr<c10::StorageImpl> storage_;
  const void* data_;
  int64_t version_;
};

}  // namespace translution
