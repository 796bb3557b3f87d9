// A SIGHUP reload's outcome seen from outside the real conveyord, as systemd and Prometheus
// see it: `conveyord reload` (the unit's ExecReload) exits 1 with the reason when the file
// is refused and 0 when it is applied; STATUS= says a reload was refused until one
// succeeds; /metrics has conveyor_config_last_reload_successful and the time of the
// last load in conveyor_config_last_reload_timestamp_seconds.
#include <stdlib.h>

#include <gtest/gtest.h>

#include <ctime>
#include <memory>
#include <string>

#include "daemon_process.h"
#include "service_test_util.h"

namespace conveyor::service_test {
namespace {

struct Command {
  int rc = -1;
  std::string err;
};

// `conveyord reload --pid PID` as ExecReload runs it, with systemd's RUNTIME_DIRECTORY;
// its stderr goes through a file in `dir`.
Command RunReload(const std::string& dir, const std::string& runtime_dir, pid_t pid) {
  const std::string err = dir + "/reload.err";
  Command c;
  c.rc = e2e::Shell("RUNTIME_DIRECTORY='" + runtime_dir + "' '" + CONVEYORD_PATH + "' reload --pid " +
                    std::to_string(pid) + " --timeout 10 2>'" + err + "'");
  c.err = ReadText(err);
  return c;
}

// The STATUS= lines that came after the message at index `from`.
std::vector<std::string> StatusLinesFrom(const NotifySocket& notify, size_t from) {
  std::vector<std::string> out;
  const std::vector<NotifySocket::Message> m = notify.messages();
  for (size_t i = from; i < m.size(); ++i) {
    const std::string status = NotifyValue(m[i].text, "STATUS");
    if (!status.empty()) out.push_back(status);
  }
  return out;
}

bool AnyHas(const std::vector<std::string>& lines, const std::string& text) {
  for (const std::string& l : lines) {
    if (l.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(ReloadOutcome, ARefusedReloadFailsTheReloadCommandAndShowsInStatusAndMetrics) {
  const std::string dir = e2e::MakeTempDir();
  const std::string config = dir + "/conveyord.toml";
  const std::string runtime_dir = dir + "/run";
  ASSERT_EQ(e2e::Shell("mkdir '" + runtime_dir + "'"), 0);
  WriteText(config, "[limits]\nmax_sessions = 2\n");
  NotifySocket notify(dir + "/notify.sock");
  ASSERT_TRUE(notify.ok());
  const double started = static_cast<double>(std::time(nullptr));
  std::unique_ptr<e2e::DaemonProcess> daemon;
  {
    NotifyEnvironment env(dir + "/notify.sock");
    setenv("RUNTIME_DIRECTORY", runtime_dir.c_str(), 1);
    daemon = std::make_unique<e2e::DaemonProcess>(
        std::vector<std::string>{"--config", config, "--metrics-listen", "127.0.0.1:0"});
    unsetenv("RUNTIME_DIRECTORY");
  }
  ASSERT_TRUE(daemon->ready());
  const int port = daemon->metrics_port();
  ASSERT_GT(port, 0);
  auto stub = v1::Transcoder::NewStub(daemon->Channel());

  // The config read at start is the first load, and it succeeded.
  EXPECT_EQ(ScrapeSample(port, "conveyor_config_last_reload_successful"), 1);
  EXPECT_GE(ScrapeSample(port, "conveyor_config_last_reload_timestamp_seconds"), started - 5);

  // A file that does not validate: refused, and everyone who asks can tell.
  WriteText(config, "[limits]\nmax_sessions = \"many\"\n");
  const size_t before_refusal = notify.messages().size();
  const double refused_at = static_cast<double>(std::time(nullptr));
  const Command refused = RunReload(dir, runtime_dir, daemon->pid());
  EXPECT_EQ(refused.rc, 1) << refused.err;
  EXPECT_NE(refused.err.find("limits.max_sessions"), std::string::npos) << refused.err;
  EXPECT_EQ(ScrapeSample(port, "conveyor_config_last_reload_successful"), 0);
  EXPECT_GE(ScrapeSample(port, "conveyor_config_last_reload_timestamp_seconds"), refused_at - 1);
  const std::vector<NotifySocket::Message> ready = MessagesWith(notify, "READY=1");
  ASSERT_FALSE(ready.empty());
  EXPECT_NE(NotifyValue(ready.back().text, "STATUS").find("reload refused"), std::string::npos)
      << "the READY=1 that ends the reload: " << ready.back().text;
  // The periodic STATUS= lines keep saying so: two after the one sent with READY=1.
  EXPECT_TRUE(WaitUntil(
      [&] {
        int refusals = 0;
        for (const std::string& l : StatusLinesFrom(notify, before_refusal)) {
          refusals += l.find("reload refused") != std::string::npos;
        }
        return refusals >= 3;
      },
      8))
      << "STATUS= stopped saying the reload was refused";
  v1::ServerStatus st;
  ASSERT_TRUE(GetStatus(stub.get(), &st));
  EXPECT_EQ(st.max_sessions(), 2u) << "the running config stays";

  // A good file again: applied, and the refusal is gone from STATUS=.
  WriteText(config, "[limits]\nmax_sessions = 3\n");
  const Command applied = RunReload(dir, runtime_dir, daemon->pid());
  EXPECT_EQ(applied.rc, 0) << applied.err;
  ASSERT_TRUE(GetStatus(stub.get(), &st));
  EXPECT_EQ(st.max_sessions(), 3u) << "the reload command returns once the reload is done";
  EXPECT_EQ(ScrapeSample(port, "conveyor_config_last_reload_successful"), 1);
  const size_t after_success = notify.messages().size();
  EXPECT_TRUE(WaitUntil([&] { return StatusLinesFrom(notify, after_success).size() >= 1; }, 5));
  EXPECT_FALSE(AnyHas(StatusLinesFrom(notify, after_success), "reload refused"));

  EXPECT_EQ(daemon->Stop(), 0);
  e2e::Shell("rm -rf '" + dir + "'");
}

TEST(ReloadOutcome, TheReloadCommandFailsWithoutADaemonToAnswer) {
  const std::string dir = e2e::MakeTempDir();
  // No such process: nothing to signal.
  const Command gone = RunReload(dir, dir, 999999999);
  EXPECT_EQ(gone.rc, 2) << gone.err;
  EXPECT_NE(gone.err.find("pid 999999999: No such process"), std::string::npos) << gone.err;
  e2e::Shell("rm -rf '" + dir + "'");
}

}  // namespace
}  // namespace conveyor::service_test
