#pragma once
// What the studio's offset views read off an operator's offset-indexed banks: how large
// each offset's matrix is, and how much each offset carries into the output for one input.
#include <string>

#include <ATen/core/Tensor.h>

#include "nn/attention.h"
#include "nn/token_layout.h"

namespace translution {

// Frobenius norms per entry of a bank's effective matrices ([E, *, *]), in the
// paper's indexing (keys un-mirrored).
OffsetMagnitudes bank_magnitudes(const std::string& projection, const at::Tensor& effective,
                                 const RelativeTable& t);

// AttentionModule::value_contributions for a bank of effective value matrices
// ([E, C, C'], head h's columns h C'/H to (h + 1) C'/H), x [N, C], alpha [H, N, N].
at::Tensor value_contributions_of(const at::Tensor& effective, const RelativeTable& t, const at::Tensor& x,
                                  const at::Tensor& alpha);

}  // namespace translution
