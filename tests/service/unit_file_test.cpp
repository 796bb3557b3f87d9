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

const std::string kUnitPath = std::string(CONVEYOR_SOURCE_DIR) + "/deploy/systemd/conveyord.service";

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

// verify checks that ExecStart's binary exists and is executable: point it at the build.
std::string WithBuiltBinary(std::string unit) {
  const std::string installed = "ExecStart=/usr/bin/conveyord ";
  const size_t at = unit.find(installed);
  if (at == std::string::npos) return unit;
  return unit.replace(at, installed.size(), std::string("ExecStart=") + CONVEYORD_PATH + " ");
}

// [Service] keys (the last value of each).
std::map<std::string, std::string> ServiceKeys(const std::string& unit) {
  std::map<std::string, std::string> keys;
  std::istringstream in(unit);
  std::string section, line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      section = line;
      continue;
    }
    const size_t eq = line.find('=');
    if (section == "[Service]" && eq != std::string::npos) keys[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return keys;
}

// A systemd time span of the forms this unit uses: "60", "60s", "2min", "1min 30s".
double SpanSeconds(const std::string& text) {
  std::istringstream in(text);
  double total = 0;
  std::string part;
  while (in >> part) {
    size_t used = 0;
    const double v = std::stod(part, &used);
    const std::string unit = part.substr(used);
    if (unit.empty() || unit == "s" || unit == "sec") {
      total += v;
    } else if (unit == "min" || unit == "m") {
      total += v * 60;
    } else {
      ADD_FAILURE() << "time span unit not handled here: " << part;
    }
  }
  return total;
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
  EXPECT_NE(value("ExecReload").find("-HUP $MAINPID"), std::string::npos) << value("ExecReload");
  ASSERT_TRUE(keys.count("WatchdogSec"));
  EXPECT_GT(SpanSeconds(value("WatchdogSec")), 0);
  // SIGTERM drains for up to workers.drain_timeout_s; systemd must not SIGKILL first.
  ASSERT_TRUE(keys.count("TimeoutStopSec"));
  EXPECT_GT(SpanSeconds(value("TimeoutStopSec")), config::DaemonConfig{}.drain_timeout_s + 5);
  // Only the main process gets SIGTERM (it drains); the rest is killed at the end.
  EXPECT_EQ(value("KillMode"), "mixed");
}

}  // namespace
}  // namespace conveyor::service_test
