// deploy/systemd/conveyord.service: systemd-analyze verify accepts it with nothing on
// stderr (verify only fails on fatal errors; unknown keys and bad values are warnings),
// and the keys conveyord's behaviour relies on are there.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <sstream>
#include <string>

#include "daemon_config.h"
#include "daemon_process.h"
#include "service_test_util.h"

namespace conveyor::service_test {
namespace {

struct Verify {
  int rc = -1;
  std::string err;
};

// Runs systemd-analyze verify on `unit_text` saved as conveyord.service in a temp dir.
Verify RunVerify(const std::string& unit_text) {
  const std::string dir = e2e::MakeTempDir();
  WriteText(dir + "/conveyord.service", unit_text);
  Verify v;
  v.rc = e2e::Shell("systemd-analyze verify '" + dir + "/conveyord.service' >'" + dir + "/out' 2>'" + dir + "/err'");
  v.err = ReadText(dir + "/err");
  e2e::Shell("rm -rf '" + dir + "'");
  return v;
}

// verify checks that each Exec*= binary exists and is executable: point them at the build.
std::string WithBuiltBinary(std::string unit) {
  const std::string installed = "=/usr/bin/conveyord ";
  for (size_t at = unit.find(installed); at != std::string::npos; at = unit.find(installed, at)) {
    const std::string built = std::string("=") + CONVEYORD_PATH + " ";
    unit.replace(at, installed.size(), built);
    at += built.size();
  }
  return unit;
}

TEST(UnitFile, SystemdAnalyzeVerifyPassesWithNothingOnStderr) {
  ASSERT_EQ(e2e::Shell("command -v systemd-analyze >/dev/null"), 0) << "systemd-analyze is not installed";
  const std::string unit = ReadText(kUnitPath);
  ASSERT_FALSE(unit.empty()) << kUnitPath;
  const std::string rewritten = WithBuiltBinary(unit);
  ASSERT_NE(rewritten, unit) << "ExecStart should start with /usr/bin/conveyord, what the package installs";
  const Verify v = RunVerify(rewritten);
  EXPECT_EQ(v.rc, 0) << v.err;
  EXPECT_EQ(v.err, "");
}

// The check above would pass vacuously if a broken unit also gave empty stderr.
TEST(UnitFile, VerifyReportsAMistakeOnStderr) {
  ASSERT_EQ(e2e::Shell("command -v systemd-analyze >/dev/null"), 0) << "systemd-analyze is not installed";
  std::string unit = WithBuiltBinary(ReadText(kUnitPath));
  const size_t at = unit.find("Restart=on-failure");
  ASSERT_NE(at, std::string::npos);
  unit.replace(at, std::string("Restart=on-failure").size(), "Restart=on-fialure");
  const Verify v = RunVerify(unit);
  EXPECT_NE(v.err.find("on-fialure"), std::string::npos) << "stderr: " << v.err;
}

TEST(UnitFile, HasTheKeysConveyordRelyOn) {
  const std::map<std::string, std::string> keys = ServiceKeys(ReadText(kUnitPath));
  auto value = [&](const std::string& k) { return keys.count(k) ? keys.at(k) : std::string("(missing)"); };
  EXPECT_EQ(value("Type"), "notify");  // READY=1 once listeners and workers are up
  EXPECT_EQ(value("NotifyAccess"), "main");
  EXPECT_EQ(value("Restart"), "on-failure");
  // The reload waits for the daemon's outcome, so that `systemctl reload` fails on a refused file.
  EXPECT_EQ(value("ExecReload"), "/usr/bin/conveyord reload --pid $MAINPID");
  ASSERT_TRUE(keys.count("WatchdogSec"));
  EXPECT_GT(SpanSeconds(value("WatchdogSec")), 0);
  // SIGTERM drains for up to workers.drain_timeout_s. conveyord extends the stop timeout
  // while it drains (EXTEND_TIMEOUT_USEC, drain_test); the default drain fits without it.
  ASSERT_TRUE(keys.count("TimeoutStopSec"));
  EXPECT_GT(SpanSeconds(value("TimeoutStopSec")), config::DaemonConfig{}.drain_timeout_s + 5);
  // Only the main process gets SIGTERM (it drains); the rest is killed at the end.
  EXPECT_EQ(value("KillMode"), "mixed");
}

}  // namespace
}  // namespace conveyor::service_test
