#pragma once
// Our ViTs to and from the public Translution code's PyTorch state dicts, by the
// mapping of io/public_vit_layout.h.
#include <string>

#include "io/state_dict_file.h"
#include "nn/vit.h"

namespace translution {

// The model's weights as the matching public model's state dict: what its
// load_state_dict(strict=True) accepts. Throws translution::Error when the public
// code has no such model.
StateDict export_public_state_dict(const ViT& model);

// The config with what the public code decides: the learned position embedding,
// present when the file has 'pos_embedding', and LoR's value slices.
ViTConfig config_for_state_dict(ViTConfig config, const StateDict& tensors);

// Overwrites the model's parameters with the file's. Every key must be expected
// for the model's config and every expected key present, each of the expected
// shape and finite; otherwise throws translution::Error naming `source` and the
// key, and leaves the model as it was.
void import_public_state_dict(ViT& model, const StateDict& tensors, const std::string& source);

}  // namespace translution
