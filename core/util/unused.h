#pragma once
// unused(a, b, ...): the parameters a build leaves unread (the branch for a CPU or
// library this build does not have), said once instead of a (void) cast each.

namespace translution {

template <typename... T>
constexpr void unused(const T&... /*values*/) {}

}  // namespace translution
