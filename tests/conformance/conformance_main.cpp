// Entry point of conformance_test: runs the tests, then removes the per-process media
// directory (mkdtemp) the tests rendered into.
#include <gtest/gtest.h>

#include "conformance_util.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  conformance::RemoveTempDir();
  return rc;
}
