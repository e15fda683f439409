// Precompiled header for the Qt targets: LibTorch first, then Qt (see QT_NO_KEYWORDS);
// the formatter would sort them.
#pragma once
// clang-format off
#include <ATen/ATen.h>
#include <torch/types.h>
#include <QtWidgets>
// clang-format on
