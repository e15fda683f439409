// core_tests' main: gtest's, except that a run in which every selected test was
// skipped (the CUDA suite without a GPU) exits with 77, which ctest reports as
// "Skipped" (SKIP_RETURN_CODE, discover_suites.cmake) instead of "Passed", and a
// run that selects no test at all fails (a ctest entry that tests nothing). As
// in the CLI and the studio, LibTorch runs one intra-op thread unless
// $TRANSLUTION_THREADS says otherwise: the engine's own passes run only then,
// and the tests comparing them with LibTorch's ops must not compare the ops
// with themselves on a machine whose default is more.
#include <cstdio>

#include <gtest/gtest.h>

#include "util/device.h"

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  translution::configure_threads();
  const int status = RUN_ALL_TESTS();
#ifdef GTEST_FLAG_GET
  const bool listing = GTEST_FLAG_GET(list_tests);
#else
  const bool listing = ::testing::GTEST_FLAG(list_tests);
#endif
  if (status != 0 || listing) return status;
  const testing::UnitTest& run = *testing::UnitTest::GetInstance();
  if (run.test_to_run_count() == 0) {
    std::fprintf(stderr, "no test selected (filter or shard matches none)\n");
    return 1;
  }
  const bool all_skipped = run.skipped_test_count() > 0 && run.successful_test_count() == 0;
  return all_skipped ? 77 : 0;
}
