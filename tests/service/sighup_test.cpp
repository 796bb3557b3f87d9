// SIGHUP on the real conveyord: the session cap from the config file goes from 1 to 3
// without touching the running session; flags still win over the file; a setting that
// needs a restart is reported as such; a broken file is refused and the old limit stays.
#include <signal.h>

#include <gtest/gtest.h>

#include <memory>

#include "daemon_process.h"
#include "service_test_util.h"

namespace conveyor::service_test {
namespace {

bool LogHas(const std::string& log_path, const std::string& text) {
  return ReadText(log_path).find(text) != std::string::npos;
}

TEST(Sighup, ReloadsTheSessionCapWithoutDroppingSessionsAndRefusesABrokenConfig) {
  const std::string dir = e2e::MakeTempDir();
  const std::string config = dir + "/conveyord.toml";
  const std::string log = dir + "/conveyord.log";
  WriteText(config, "[limits]\nmax_sessions = 1\n");
  std::unique_ptr<e2e::DaemonProcess> daemon;
  {
    StderrToFile capture(log);
    // DaemonProcess also passes --log-level warn: a flag, which must win over the file.
    daemon = std::make_unique<e2e::DaemonProcess>(std::vector<std::string>{"--config", config});
  }
  ASSERT_TRUE(daemon->ready()) << ReadText(log);
  auto stub = v1::Transcoder::NewStub(daemon->Channel());

  HeldSession first(stub.get(), 96, 64);
  ASSERT_TRUE(WaitForActiveSessions(stub.get(), 1, 10));
  EXPECT_EQ(TryOneMoreSession(stub.get()), grpc::StatusCode::RESOURCE_EXHAUSTED);

  WriteText(config,
            "[server]\nlog_level = \"debug\"\n"
            "[limits]\nmax_sessions = 3\n"
            "[workers]\ngpu_slots = 4\n");
  ASSERT_EQ(kill(daemon->pid(), SIGHUP), 0);
  ASSERT_TRUE(WaitUntil(
      [&] {
        v1::ServerStatus st;
        return GetStatus(stub.get(), &st) && st.max_sessions() == 3;
      },
      10))
      << ReadText(log);
  EXPECT_TRUE(WaitUntil([&] { return LogHas(log, "workers.gpu_slots changed but needs a restart"); }, 5))
      << ReadText(log);
  EXPECT_TRUE(LogHas(log, "server.log_level changed in the config file, but a command-line flag sets it"))
      << ReadText(log);

  {
    HeldSession second(stub.get(), 96, 64);
    HeldSession third(stub.get(), 96, 64);
    ASSERT_TRUE(WaitForActiveSessions(stub.get(), 3, 10));
    EXPECT_EQ(TryOneMoreSession(stub.get()), grpc::StatusCode::RESOURCE_EXHAUSTED);
    for (HeldSession* s : {&second, &third}) {
      const e2e::TranscodeOutcome& out = s->Join();
      ASSERT_TRUE(out.status.ok()) << out.status.error_message();
      EXPECT_EQ(FrameCount(out), 2u);
    }
  }
  // The session that was running across the reload finishes whole.
  const e2e::TranscodeOutcome& out = first.Join();
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  EXPECT_EQ(FrameCount(out), 2u);
  ASSERT_TRUE(out.summary_seen);
  EXPECT_EQ(out.summary.frames_out(), 2u);

  // The log level stayed at the flag's warn: no debug line since the start.
  EXPECT_FALSE(LogHas(log, "[debug]")) << ReadText(log);

  // A broken file: refused, logged, and the cap of 3 still holds.
  WriteText(config, "[limits]\nmax_sessions = \"many\"\n");
  ASSERT_EQ(kill(daemon->pid(), SIGHUP), 0);
  EXPECT_TRUE(WaitUntil([&] { return LogHas(log, "reload refused, the running config stays"); }, 10))
      << ReadText(log);
  EXPECT_TRUE(LogHas(log, "limits.max_sessions")) << ReadText(log);
  v1::ServerStatus st;
  ASSERT_TRUE(GetStatus(stub.get(), &st));
  EXPECT_EQ(st.max_sessions(), 3u);
  {
    std::vector<std::unique_ptr<HeldSession>> held;
    for (int i = 0; i < 3; ++i) held.push_back(std::make_unique<HeldSession>(stub.get(), 96, 64));
    ASSERT_TRUE(WaitForActiveSessions(stub.get(), 3, 10));
    EXPECT_EQ(TryOneMoreSession(stub.get()), grpc::StatusCode::RESOURCE_EXHAUSTED);
    for (auto& h : held) EXPECT_TRUE(h->Join().status.ok());
  }

  EXPECT_EQ(daemon->Stop(), 0);
  e2e::Shell("rm -rf '" + dir + "'");
}

}  // namespace
}  // namespace conveyor::service_test
