#pragma once
// The size of a ViT from its config alone, without building it: parameters and
// the offset-indexed matrices per relative projection, in checked 64-bit
// arithmetic, so that any config, however large, is answered at once or named
// as too large (a translution::Error), never handed to LibTorch to overflow.
#include <cstdint>

#include "nn/attention_spec.h"
#include "nn/vit_config.h"

namespace translution {

// E: matrices per relative projection of a block on this config's 2-D grid with
// CLS: (2H-1)(2W-1) offsets and the three CLS matrices, or N^2 for the absolute
// pair encoding (Table 5). Throws an Error when it overflows.
int64_t relative_entries(const ViTConfig& config, PairEncoding encoding);

// The number of parameters ViT(config) registers, counted from the equations of
// each part (patch embedding, CLS token, position embedding, blocks, head). The
// test suite checks it against built models of every operator. Throws an Error
// naming the config when the count overflows 64 bits.
int64_t parameter_count(const ViTConfig& config);

// The parameters of block `index` alone (its two LayerNorms, attention and MLP),
// checked likewise: the memory estimate places each block's gradients in time.
int64_t block_parameter_count(const ViTConfig& config, int64_t index);

}  // namespace translution
