// Entry point of media_tests: FFmpeg logs errors only (CONVEYOR_AV_LOG=debug|info|warning
// for more), and the per-process media directory is removed after the tests.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "media_test_util.h"

extern "C" {
#include <libavutil/log.h>
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int level = AV_LOG_ERROR;
  if (const char* env = std::getenv("CONVEYOR_AV_LOG")) {
    if (std::strcmp(env, "debug") == 0) level = AV_LOG_DEBUG;
    if (std::strcmp(env, "info") == 0) level = AV_LOG_INFO;
    if (std::strcmp(env, "warning") == 0) level = AV_LOG_WARNING;
  }
  av_log_set_level(level);
  const int rc = RUN_ALL_TESTS();
  media_test::RemoveTempDir();
  return rc;
}
