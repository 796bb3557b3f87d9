// What the real conveyord's log says about the security of its front end: gRPC's own
// errors (a failed TLS handshake) as lines of the daemon's format with a level.
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "daemon_process.h"
#include "security_test_util.h"

namespace conveyor::security_test {
namespace {

using e2e::DaemonProcess;
using e2e::Shell;

// The lines of `text` that match `pattern`.
std::vector<std::string> LinesMatching(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  std::vector<std::string> found;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_search(line, re)) found.push_back(line);
  }
  return found;
}

// The daemon's plain (not a terminal, not the journal) line: time, level, message.
constexpr char kOurLine[] = R"(^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \[(trace|debug|info|warning|error|critical)\] )";

// A daemon on TLS with its log in dir/log.
class DaemonLog : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = e2e::MakeTempDir(); }
  void TearDown() override {
    daemon_.reset();
    Shell("rm -rf '" + dir_ + "'");
  }
  void Start(std::vector<std::string> flags) {
    flags.insert(flags.end(), {"--log-level", "info"});
    StderrToFile capture(log_path());
    daemon_ = std::make_unique<DaemonProcess>(flags);
    ASSERT_TRUE(daemon_->ready()) << ReadText(log_path());
    port_ = daemon_->tcp_port();
    ASSERT_GT(port_, 0);
  }
  std::string log_path() const { return dir_ + "/log"; }
  std::string log() const { return ReadText(log_path()); }

  std::string dir_;
  int port_ = 0;
  std::unique_ptr<DaemonProcess> daemon_;
};

TEST_F(DaemonLog, AFailedTlsHandshakeIsALineOfTheDaemonsFormatWithALevel) {
  Start(TlsFlags());
  const grpc::Status plain = CallStatus(TcpChannel(port_, {}));
  ASSERT_EQ(plain.error_code(), grpc::StatusCode::UNAVAILABLE) << plain.error_message();
  const std::string handshake = std::string(kOurLine) + R"(grpc: .*[Hh]andshake failed.* \(\S+\.cc:\d+\)$)";
  ASSERT_TRUE(WaitUntil([&] { return !LinesMatching(log(), handshake).empty(); }, 10)) << log();
  EXPECT_NE(LinesMatching(log(), handshake).front().find("[warning]"), std::string::npos)
      << "a peer's failed handshake is a warning: " << log();
  // None of gRPC's own lines ("E1206 07:40:21.084 123 file.cc:1501] ...") is left.
  EXPECT_TRUE(LinesMatching(log(), R"(^[EWID]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ \S+:\d+\] )").empty()) << log();
}

}  // namespace
}  // namespace conveyor::security_test
