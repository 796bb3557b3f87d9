// Logging: level names, and the line format journald gets when stderr is the journal
// stream (a syslog priority prefix, no timestamp).
#include "logging.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "config_test_util.h"

namespace conveyor::config {
namespace {

TEST(Logging, Levels) {
  for (const char* level : {"trace", "debug", "info", "warn", "error", "off"}) {
    EXPECT_TRUE(CheckLogLevel(level).ok()) << level;
  }
  const Status s = CheckLogLevel("verbose");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'verbose'"), std::string::npos);
  EXPECT_FALSE(InitLogging("verbose").ok());
  EXPECT_FALSE(SetLogLevel("warning").ok());
  ASSERT_TRUE(InitLogging("info").ok());
  ASSERT_TRUE(SetLogLevel("error").ok());
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::err);
}

// Points fd 2 at a file for the scope, then puts the real stderr back.
class StderrToFile {
 public:
  explicit StderrToFile(const std::string& path) {
    std::fflush(stderr);
    saved_ = dup(STDERR_FILENO);
    FILE* f = std::fopen(path.c_str(), "w");
    dup2(fileno(f), STDERR_FILENO);
    std::fclose(f);
  }
  ~StderrToFile() {
    std::fflush(stderr);
    dup2(saved_, STDERR_FILENO);
    close(saved_);
  }

 private:
  int saved_ = -1;
};

std::string DevIno(int fd) {
  struct stat st;
  fstat(fd, &st);
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

TEST(Logging, JournalLinesCarryThePriority) {
  TempDir tmp;
  const std::string path = tmp.path() + "/stderr.log";
  {
    StderrToFile redirect(path);
    ScopedEnv journal("JOURNAL_STREAM", DevIno(STDERR_FILENO));
    ASSERT_EQ(DetectLogStyle(), LogStyle::kJournal);
    ASSERT_TRUE(InitLogging("debug").ok());
    spdlog::debug("decoder ready");
    spdlog::info("listening on {}", "unix:/run/conveyor/conveyord.sock");
    spdlog::warn("worker {} restarted", 0);
    spdlog::error("session failed");
    spdlog::default_logger()->flush();
  }
  EXPECT_EQ(ReadWholeFile(path),
            "<7>[debug] decoder ready\n"
            "<6>[info] listening on unix:/run/conveyor/conveyord.sock\n"
            "<4>[warning] worker 0 restarted\n"
            "<3>[error] session failed\n");
  ASSERT_TRUE(InitLogging("info").ok());  // back to the real stderr
}

TEST(Logging, PlainLinesWhenNotTheJournal) {
  TempDir tmp;
  const std::string path = tmp.path() + "/stderr.log";
  {
    StderrToFile redirect(path);
    // A variable inherited from a parent service names some other stream.
    ScopedEnv journal("JOURNAL_STREAM", "1:2");
    ASSERT_EQ(DetectLogStyle(), LogStyle::kPlain);
    ASSERT_TRUE(InitLogging("info").ok());
    spdlog::debug("hidden");
    spdlog::info("shown");
    spdlog::default_logger()->flush();
  }
  const std::string text = ReadWholeFile(path);
  EXPECT_EQ(text.find("hidden"), std::string::npos) << text;
  EXPECT_NE(text.find(" [info] shown\n"), std::string::npos) << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << "colour codes in a file: " << text;
  EXPECT_EQ(text.find("<6>"), std::string::npos) << text;
  ASSERT_GE(text.size(), 24u);
  EXPECT_EQ(text[4], '-');  // starts with a date
  ASSERT_TRUE(InitLogging("info").ok());
}

}  // namespace
}  // namespace conveyor::config
