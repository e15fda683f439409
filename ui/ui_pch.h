// Precompiled header for the Qt targets: LibTorch first, then Qt (see QT_NO_KEYWORDS).
#pragma once
#include <ATen/ATen.h>
#include <torch/types.h>
#include <QtWidgets>
