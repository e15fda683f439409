#include "cpu/blas_kernels.h"

#ifdef TRANSLUTION_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace translution {
namespace {

bool cpu_has_skylakex_subsets() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

}  // namespace

std::string blas_core() {
#ifdef TRANSLUTION_HAVE_OPENBLAS
  const char* name = openblas_get_corename();
  return name ? std::string(name) : std::string();
#else
  return {};
#endif
}

std::string avx2_blas_hint(bool cpu_has_subsets, const std::string& core, const char* coretype_variable) {
  if (!cpu_has_subsets || lower(core) != "haswell") return {};
  const std::string cost =
      "its AVX-512 kernels ran this project's GEMMs up to 1.6x faster on an AVX-512 machine";
  if (coretype_variable)
    return "with OPENBLAS_CORETYPE=" + std::string(coretype_variable) +
           ", OpenBLAS runs its AVX2 (Haswell) kernels on this AVX-512 CPU; unset it (env -u "
           "OPENBLAS_CORETYPE) "
           "to let OpenBLAS choose: " +
           cost + " (docs/performance.md)";
  return "OpenBLAS chose its AVX2 (Haswell) kernels on this AVX-512 CPU; OPENBLAS_CORETYPE=SkylakeX selects "
         "its "
         "AVX-512 ones: " +
         cost + " (docs/performance.md)";
}

std::string avx2_blas_hint() {
  return avx2_blas_hint(cpu_has_skylakex_subsets(), blas_core(), std::getenv("OPENBLAS_CORETYPE"));
}

}  // namespace translution
