// ConfigReloader: what a SIGHUP takes from the file (limits, log level), what it leaves for
// a restart (listen addresses, workers, sizes the workers' buffers are made for), that the
// startup flags still win, that a broken file changes nothing, and that the credentials'
// files are read on every reload, their error refusing it.
#include "config_reload.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "daemon_process.h"
#include "service_test_util.h"

namespace conveyor::config {
namespace {

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

class ConfigReloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = e2e::MakeTempDir();
    path_ = dir_ + "/conveyord.toml";
  }
  void TearDown() override { e2e::Shell("rm -rf '" + dir_ + "'"); }

  // A reloader for `conveyord --config FILE <flags>` with the file holding `text`.
  std::unique_ptr<ConfigReloader> Start(const std::string& text, std::vector<std::string> flags = {}) {
    service_test::WriteText(path_, text);
    args_ = {"conveyord", "--config", path_};
    args_.insert(args_.end(), flags.begin(), flags.end());
    std::vector<const char*> argv;
    for (const std::string& a : args_) argv.push_back(a.c_str());
    StatusOr<CommandLine> cl = ParseCommandLine(static_cast<int>(argv.size()), argv.data());
    EXPECT_TRUE(cl.ok()) << cl.status().ToString();
    if (!cl.ok()) return nullptr;
    return std::make_unique<ConfigReloader>(args_, *cl);
  }
  void Rewrite(const std::string& text) { service_test::WriteText(path_, text); }

  std::string dir_, path_;
  std::vector<std::string> args_;
};

TEST_F(ConfigReloadTest, LimitsAndLogLevelApply) {
  auto r = Start("[limits]\nmax_sessions = 1\n");
  ASSERT_TRUE(r);
  Rewrite("[server]\nlog_level = \"debug\"\n[limits]\nmax_sessions = 3\nidle_timeout_s = 5\n"
          "memory_budget_bytes = 1073741824\n");
  StatusOr<ConfigReload> reload = r->Reload();
  ASSERT_TRUE(reload.ok()) << reload.status().ToString();
  EXPECT_EQ(r->running().max_sessions, 3);
  EXPECT_EQ(r->running().memory_budget_bytes, 1u << 30);
  EXPECT_TRUE(Contains(reload->applied, "limits.memory_budget_bytes"));
  EXPECT_EQ(r->running().idle_timeout_s, 5);
  EXPECT_EQ(r->running().log_level, "debug");
  EXPECT_TRUE(Contains(reload->applied, "limits.max_sessions"));
  EXPECT_TRUE(Contains(reload->applied, "server.log_level"));
  EXPECT_TRUE(reload->needs_restart.empty());
  EXPECT_TRUE(reload->overridden.empty());
}

TEST_F(ConfigReloadTest, RestartOnlySettingsKeepTheirRunningValues) {
  auto r = Start("[workers]\ngpu_slots = 8\n");
  ASSERT_TRUE(r);
  Rewrite("[server]\nlisten = [\"unix:/tmp/elsewhere.sock\"]\n[limits]\nmax_width = 640\n[workers]\ngpu_slots = 2\n");
  StatusOr<ConfigReload> reload = r->Reload();
  ASSERT_TRUE(reload.ok()) << reload.status().ToString();
  for (const char* name : {"server.listen", "limits.max_width", "workers.gpu_slots"}) {
    EXPECT_TRUE(Contains(reload->needs_restart, name)) << name;
    EXPECT_FALSE(ChangeableAtRuntime(name)) << name;
  }
  EXPECT_TRUE(reload->applied.empty());
  EXPECT_EQ(r->running().gpu_slots, 8);
  EXPECT_EQ(r->running().max_width, DaemonConfig{}.max_width);
  EXPECT_TRUE(r->running().listen.empty());
}

TEST_F(ConfigReloadTest, FlagsStillWinAndTheHiddenEditIsReported) {
  auto r = Start("[limits]\nmax_sessions = 1\n", {"--max-sessions", "5"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->running().max_sessions, 5);
  Rewrite("[limits]\nmax_sessions = 3\n");
  StatusOr<ConfigReload> reload = r->Reload();
  ASSERT_TRUE(reload.ok()) << reload.status().ToString();
  EXPECT_EQ(r->running().max_sessions, 5);
  EXPECT_TRUE(Contains(reload->overridden, "limits.max_sessions"));
  EXPECT_FALSE(Contains(reload->applied, "limits.max_sessions"));
}

TEST_F(ConfigReloadTest, AnOldKeyNameInTheReloadedFileIsReportedForTheLog) {
  auto r = Start("[limits]\nmax_sessions = 2\n");
  ASSERT_TRUE(r);
  Rewrite("[server]\nshared_memory_input = false\n[limits]\nmax_sessions = 2\n");
  StatusOr<ConfigReload> reload = r->Reload();
  ASSERT_TRUE(reload.ok()) << reload.status().ToString();
  ASSERT_EQ(reload->notices.size(), 1u);
  EXPECT_NE(reload->notices[0].find("server.shared_memory_input is now named server.shared_memory"),
            std::string::npos)
      << reload->notices[0];
  EXPECT_TRUE(Contains(reload->needs_restart, "server.shared_memory"));
}

TEST_F(ConfigReloadTest, ABrokenFileChangesNothing) {
  auto r = Start("[limits]\nmax_sessions = 2\n");
  ASSERT_TRUE(r);
  for (const char* broken : {"[limits]\nmax_sessions = \"many\"\n", "[limits]\nmax_sessions = 0\n",
                             "[limits\nmax_sessions = 4\n", "[limits]\nmax_sesions = 4\n"}) {
    Rewrite(broken);
    StatusOr<ConfigReload> reload = r->Reload();
    EXPECT_FALSE(reload.ok()) << broken;
    EXPECT_EQ(r->running().max_sessions, 2) << broken;
  }
  e2e::Shell("rm -f '" + path_ + "'");
  EXPECT_EQ(r->Reload().status().code(), StatusCode::kNotFound);
  // Fixed again: the reload goes through.
  Rewrite("[limits]\nmax_sessions = 4\n");
  ASSERT_TRUE(r->Reload().ok());
  EXPECT_EQ(r->running().max_sessions, 4);
}

TEST_F(ConfigReloadTest, CredentialFilesAreReadOnEveryReloadAndTheirErrorRefusesIt) {
  auto r = Start("[limits]\nmax_sessions = 2\n");
  ASSERT_TRUE(r);
  int calls = 0;
  StatusOr<std::vector<std::string>> answer = std::vector<std::string>{"server.auth_token_file"};
  r->set_credential_reload([&]() -> StatusOr<std::vector<std::string>> {
    ++calls;
    return answer;
  });
  // The config file is unchanged: the credentials are read all the same.
  StatusOr<ConfigReload> reload = r->Reload();
  ASSERT_TRUE(reload.ok()) << reload.status().ToString();
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(Contains(reload->applied, "server.auth_token_file"));

  // Their error refuses the whole reload, the file's new values included.
  answer = InvalidArgument("server.auth_token_file: cannot read /nowhere");
  Rewrite("[limits]\nmax_sessions = 4\n");
  reload = r->Reload();
  EXPECT_EQ(reload.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r->running().max_sessions, 2);

  // A file that does not parse refuses the reload before the credentials are read.
  Rewrite("[limits]\nmax_sessions = \"many\"\n");
  EXPECT_FALSE(r->Reload().ok());
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace conveyor::config
