// Precompiled header for every target that uses LibTorch: the heavy headers are
// parsed once per build instead of once per file.
#pragma once
#include <ATen/ATen.h>
#include <torch/data.h>
#include <torch/nn.h>
#include <torch/optim.h>
#include <torch/serialize.h>
#include <torch/types.h>
