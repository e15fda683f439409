// The studio's BLAS setting: one thread per GEMM, unless the user says otherwise.
#include <dlfcn.h>

#include <cstdlib>

#include <gtest/gtest.h>

#include "util/device.h"

namespace translution {
namespace {

using GetThreads = int (*)();

TEST(ConcurrentBlas, OpenBlasThreadsEachGemmOnOneThread) {
  const auto get = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (!get) {
    EXPECT_FALSE(configure_concurrent_blas());
    GTEST_SKIP() << "this LibTorch's BLAS is not OpenBLAS";
  }
  const char* env = std::getenv("OPENBLAS_NUM_THREADS");
  if (env && *env) GTEST_SKIP() << "OPENBLAS_NUM_THREADS is set, and it wins";
  EXPECT_TRUE(configure_concurrent_blas());
  EXPECT_EQ(get(), 1);
}

}  // namespace
}  // namespace translution
