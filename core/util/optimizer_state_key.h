#pragma once
// The key under which LibTorch's optimizers keep a parameter's state: the tensor's
// impl, printed to a string in LibTorch 1.x (c10::guts::to_string, i.e. ostream <<),
// the pointer itself in 2.x. Whoever reads or fills that map (the fused AdamW, the
// checkpoint's optimizer tensors) must build the key the same way.
#include <sstream>
#include <string>
#include <type_traits>

#include <ATen/core/Tensor.h>

namespace translution {

template <typename Map>
typename Map::key_type optimizer_state_key(const at::Tensor& p) {
  if constexpr (std::is_same_v<typename Map::key_type, std::string>) {
    std::ostringstream key;
    key << p.unsafeGetTensorImpl();
    return key.str();
  } else {
    return p.unsafeGetTensorImpl();
  }
}

}  // namespace translution
