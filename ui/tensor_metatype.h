#pragma once
// Lets at::Tensor travel through queued (cross-thread) signal connections.
#include <ATen/core/Tensor.h>
#include <QMetaType>

Q_DECLARE_METATYPE(at::Tensor)
