// deploy/systemd/conveyord.service: systemd-analyze verify accepts it with nothing on
// stderr (verify only fails on fatal errors; unknown keys and bad values are warnings),
// systemd-analyze security rates it at 2.0 or better, and the keys conveyord's behaviour
// relies on are there, a config error's exit status among them.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

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
  // verify runs `man` for each man: page in Documentation=: the built pages, laid out as
  // the package installs them.
  const std::string man = dir + "/man";
  e2e::Shell("mkdir -p '" + man + "/man5' '" + man + "/man8' && cp " CONVEYOR_MAN_DIR "/conveyord.8.gz '" + man +
             "/man8/' && cp " CONVEYOR_MAN_DIR "/conveyord.toml.5.gz '" + man + "/man5/'");
  Verify v;
  v.rc = e2e::Shell("MANPATH='" + man + "' systemd-analyze verify '" + dir + "/conveyord.service' >'" + dir +
                    "/out' 2>'" + dir + "/err'");
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

struct Security {
  int rc = -1;
  std::string table;  // stdout and stderr
  double overall = -1;
};

// systemd-analyze security --offline=true --threshold=20 (exposure 2.0, in tenths) on
// `unit_text` saved as conveyord.service.
Security RunSecurity(const std::string& unit_text) {
  const std::string dir = e2e::MakeTempDir();
  WriteText(dir + "/conveyord.service", unit_text);
  Security s;
  s.rc = e2e::Shell("systemd-analyze security --no-pager --offline=true --threshold=20 '" + dir +
                    "/conveyord.service' >'" + dir + "/out' 2>&1");
  s.table = ReadText(dir + "/out");
  e2e::Shell("rm -rf '" + dir + "'");
  const std::string overall = "Overall exposure level for conveyord.service: ";
  const size_t at = s.table.find(overall);
  if (at != std::string::npos) s.overall = std::atof(s.table.c_str() + at + overall.size());
  return s;
}

std::string WithoutLinesStarting(const std::string& unit, const std::vector<std::string>& prefixes) {
  std::istringstream in(unit);
  std::string out, line;
  while (std::getline(in, line)) {
    bool drop = false;
    for (const std::string& p : prefixes) drop = drop || line.rfind(p, 0) == 0;
    if (!drop) out += line + "\n";
  }
  return out;
}

// The exposures left open are listed with their reasons in the unit's comments.
TEST(UnitFile, SystemdAnalyzeSecurityRatesItAt2OrBetter) {
  ASSERT_EQ(e2e::Shell("command -v systemd-analyze >/dev/null"), 0) << "systemd-analyze is not installed";
  const std::string unit = ReadText(kUnitPath);
  ASSERT_FALSE(unit.empty()) << kUnitPath;
  const Security s = RunSecurity(unit);
  std::printf("%s", s.table.c_str());  // the table, into the test's log
  ASSERT_GE(s.overall, 0) << "no overall exposure level in:\n" << s.table;
  EXPECT_LE(s.overall, 2.0);
  EXPECT_EQ(s.rc, 0) << "--threshold=20 refused it";
}

// The threshold above would pass vacuously if it never failed: without its system call
// filter and its /proc and IPC settings, the unit is rated over 2.0 and refused.
TEST(UnitFile, SecurityThresholdRefusesAWeakerUnit) {
  ASSERT_EQ(e2e::Shell("command -v systemd-analyze >/dev/null"), 0) << "systemd-analyze is not installed";
  const std::string weaker = WithoutLinesStarting(
      ReadText(kUnitPath), {"SystemCallFilter=", "ProtectProc=", "PrivateIPC=", "RemoveIPC=", "PrivateMounts="});
  const Security s = RunSecurity(weaker);
  EXPECT_GT(s.overall, 2.0) << s.table;
  EXPECT_NE(s.rc, 0) << s.table;
}

// Paths in DeviceAllow= are looked up when the unit starts and skipped when the node is not
// there yet; device classes (char-<name in /proc/devices>) cover nodes made later.
TEST(UnitFile, DeviceAllowNamesDeviceClassesNotPaths) {
  std::istringstream in(ReadText(kUnitPath));
  std::string line;
  int entries = 0;
  while (std::getline(in, line)) {
    if (line.rfind("DeviceAllow=", 0) != 0) continue;
    ++entries;
    EXPECT_EQ(line.rfind("DeviceAllow=char-", 0), 0u) << line;
  }
  EXPECT_GT(entries, 0);
  const std::map<std::string, std::string> keys = ServiceKeys(ReadText(kUnitPath));
  EXPECT_EQ(keys.count("DevicePolicy") ? keys.at("DevicePolicy") : "", "closed");
}

// LimitMEMLOCK is bounded, and covers what the defaults pin with eight GPUs: the frame
// assembly pool, and per GPU its slots (about 50 MiB each at 3840x2160) and its 64 MiB
// readback ring.
TEST(UnitFile, LimitMemlockCoversTheDefaultPinnedBudgets) {
  const std::map<std::string, std::string> keys = ServiceKeys(ReadText(kUnitPath));
  ASSERT_TRUE(keys.count("LimitMEMLOCK"));
  const std::string text = keys.at("LimitMEMLOCK");
  ASSERT_NE(text, "infinity");
  char* end = nullptr;
  uint64_t limit = std::strtoull(text.c_str(), &end, 10);
  const std::string unit_suffix = end;
  if (unit_suffix == "G") limit <<= 30;
  else if (unit_suffix == "M") limit <<= 20;
  else ASSERT_EQ(unit_suffix, "") << text;
  const config::DaemonConfig defaults;
  const uint64_t mib = 1ull << 20;
  const uint64_t per_gpu = static_cast<uint64_t>(defaults.gpu_slots) * 50 * mib + 64 * mib;
  EXPECT_GE(limit, defaults.pinned_input_bytes + 8 * per_gpu) << text;
}

// MemoryMax is a share of the host's memory, so that the auto memory budget (3/4 of the
// cgroup's limit) leaves the daemon's memory outside sessions and the host their share;
// TasksMax covers the threads of the default session cap, each session with FFmpeg's
// most decode threads, and the daemon's own at 256 hardware threads.
TEST(UnitFile, MemoryMaxAndTasksMaxFitTheDefaultBudgetAndThreads) {
  const std::map<std::string, std::string> keys = ServiceKeys(ReadText(kUnitPath));
  ASSERT_TRUE(keys.count("MemoryMax"));
  const std::string memory = keys.at("MemoryMax");
  ASSERT_EQ(memory.back(), '%') << memory;
  const double percent = std::strtod(memory.c_str(), nullptr);
  EXPECT_GE(percent, 50) << memory;
  EXPECT_LE(percent, 90) << "leave the host some of its memory: " << memory;
  EXPECT_EQ(config::DaemonConfig{}.memory_budget_bytes, 0u) << "the default budget is auto, a share of MemoryMax";

  ASSERT_TRUE(keys.count("TasksMax"));
  char* end = nullptr;
  const unsigned long tasks = std::strtoul(keys.at("TasksMax").c_str(), &end, 10);
  ASSERT_EQ(*end, '\0') << "a number, not a share: " << keys.at("TasksMax");
  const unsigned long per_session = 2 + 16;     // pipeline and output threads, FFmpeg's most
  const unsigned long connections = 129 + 65;   // HTTP and attach: listener and connections
  const unsigned long host_threads = 2 * 256;   // CPU worker and gRPC, one a hardware thread
  const unsigned long own = 4 * 8 + 16;         // GPU workers (8 GPUs) and the daemon's own
  EXPECT_GE(tasks, static_cast<unsigned long>(config::DaemonConfig{}.max_sessions) * per_session + connections +
                       host_threads + own);
}

// A wrong config file exits 2, and RestartPreventExitStatus=2 keeps systemd from starting
// it again every RestartSec; failures at run time exit 1 and are restarted.
TEST(UnitFile, AConfigErrorExitsWithTheStatusThatStopsRestarts) {
  const std::map<std::string, std::string> keys = ServiceKeys(ReadText(kUnitPath));
  EXPECT_EQ(keys.count("RestartPreventExitStatus") ? keys.at("RestartPreventExitStatus") : "", "2");
  const std::string dir = e2e::MakeTempDir();
  const std::vector<std::string> bad_files = {
      "[workers\n",                 // does not parse
      "[workers]\ngpu_slots = 999\n",  // out of range
      "[nosuch]\nkey = 1\n",        // unknown table
  };
  for (const std::string& bad : bad_files) {
    WriteText(dir + "/bad.toml", bad);
    const int rc = e2e::Shell(std::string(CONVEYORD_PATH) + " --config '" + dir + "/bad.toml' >/dev/null 2>'" +
                              dir + "/err'");
    EXPECT_EQ(rc, 2) << bad << ReadText(dir + "/err");
  }
  const int missing = e2e::Shell(std::string(CONVEYORD_PATH) + " --config '" + dir + "/none.toml' 2>/dev/null");
  EXPECT_EQ(missing, 2);
  e2e::Shell("rm -rf '" + dir + "'");
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
