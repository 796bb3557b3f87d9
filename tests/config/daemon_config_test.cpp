// conveyord's options: validation, the TOML file (good, unknown keys, wrong types, out of
// range), flags over the file, and the shipped deploy/conveyord.toml, which must be
// exactly what RenderConfigToml(DaemonConfig{}) writes.
#include "daemon_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "config_fields.h"
#include "config_test_util.h"

namespace conveyor::config {
namespace {

const std::string kDeployFile = std::string(CONVEYOR_SOURCE_DIR) + "/deploy/conveyord.toml";

void ExpectError(const Status& s, StatusCode code, const std::vector<std::string>& parts) {
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), code) << s.ToString();
  for (const std::string& p : parts) {
    EXPECT_NE(s.message().find(p), std::string::npos) << "'" << p << "' not in: " << s.message();
  }
}

StatusOr<CommandLine> Parse(std::vector<std::string> args, const std::string& default_path) {
  args.insert(args.begin(), "conveyord");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  argv.push_back(nullptr);
  return ParseCommandLine(static_cast<int>(args.size()), argv.data(), default_path);
}

TEST(DaemonConfig, DefaultsAreValid) {
  const DaemonConfig c;
  EXPECT_TRUE(c.Validate().ok()) << c.Validate().ToString();
  ASSERT_EQ(c.EffectiveListen().size(), 1u);
  EXPECT_EQ(c.EffectiveListen()[0], DefaultListenAddress());
  EXPECT_EQ(c.max_session_bytes, 64ull << 30);
  EXPECT_EQ(c.session_output_bytes, 64ull << 20);
  EXPECT_EQ(c.input_queue_bytes, 16 << 20);
}

TEST(DaemonConfig, ValidateNamesTheField) {
  DaemonConfig c;
  c.max_sessions = 0;
  ExpectError(c.Validate(), StatusCode::kInvalidArgument,
              {"limits.max_sessions", "0", "1..100000"});
  c = DaemonConfig{};
  c.idle_timeout_s = 0;
  ExpectError(c.Validate(), StatusCode::kInvalidArgument, {"limits.idle_timeout_s"});
  c = DaemonConfig{};
  c.max_width = 20000;
  ExpectError(c.Validate(), StatusCode::kInvalidArgument, {"limits.max_width", "20000"});
  c = DaemonConfig{};
  c.gpu_slots = 0;
  ExpectError(c.Validate(), StatusCode::kInvalidArgument, {"workers.gpu_slots"});
  c = DaemonConfig{};
  c.cpu_threads = -1;
  ExpectError(c.Validate(), StatusCode::kInvalidArgument, {"workers.cpu_threads"});
  c = DaemonConfig{};
  c.workers = "fpga";
  ExpectError(c.Validate(), StatusCode::kInvalidArgument, {"workers.workers", "fpga"});
  c = DaemonConfig{};
  c.log_level = "loud";
  ExpectError(c.Validate(), StatusCode::kInvalidArgument, {"server.log_level", "loud"});
  c = DaemonConfig{};
  c.metrics_listen = "unix:/tmp/m.sock";
  ExpectError(c.Validate(), StatusCode::kInvalidArgument, {"server.metrics_listen"});
  c.metrics_listen = "";  // off
  EXPECT_TRUE(c.Validate().ok());
  c = DaemonConfig{};
  c.max_frame_rate = std::nan("");
  ExpectError(c.Validate(), StatusCode::kInvalidArgument, {"limits.max_frame_rate"});
}

TEST(DaemonConfig, NonLoopbackTcpNeedsAllowInsecureTcp) {
  DaemonConfig c;
  c.listen = {*ParseListenAddress("0.0.0.0:50051")};
  ExpectError(c.Validate(), StatusCode::kInvalidArgument, {"0.0.0.0:50051", "allow_insecure_tcp"});
  c.allow_insecure_tcp = true;
  EXPECT_TRUE(c.Validate().ok());
  c.allow_insecure_tcp = false;
  c.listen = {*ParseListenAddress("127.0.0.1:50051"), *ParseListenAddress("unix:/tmp/c.sock")};
  EXPECT_TRUE(c.Validate().ok());
  c.listen.push_back(c.listen[0]);
  ExpectError(c.Validate(), StatusCode::kInvalidArgument, {"listed twice"});
}

// ---- The file ----

TEST(ConfigFile, FullFile) {
  auto c = ParseConfigToml(R"(
[server]
listen = ["unix:/run/conveyor/c.sock", "[::1]:50051"]
allow_insecure_tcp = false
metrics_listen = "0.0.0.0:9100"
log_level = "debug"

[limits]
max_sessions = 8
max_width = 1920
max_height = 1080
max_frame_rate = 60.5
max_session_bytes = 1073741824
idle_timeout_s = 5          # an integer is fine for seconds
session_queue_frames = 2
session_output_bytes = 1048576
input_queue_bytes = 4194304

[workers]
workers = "cpu"
gpu_slots = 2
cpu_threads = 4
decode_threads = 1
drain_timeout_s = 2.5
)",
                           "test.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->listen.size(), 2u);
  EXPECT_EQ(c->listen[0].path, "/run/conveyor/c.sock");
  EXPECT_EQ(c->listen[1].host, "::1");
  EXPECT_EQ(c->metrics_listen, "0.0.0.0:9100");
  EXPECT_EQ(c->log_level, "debug");
  EXPECT_EQ(c->max_sessions, 8);
  EXPECT_EQ(c->max_width, 1920);
  EXPECT_EQ(c->max_height, 1080);
  EXPECT_EQ(c->max_frame_rate, 60.5);
  EXPECT_EQ(c->max_session_bytes, 1ull << 30);
  EXPECT_EQ(c->idle_timeout_s, 5.0);
  EXPECT_EQ(c->session_queue_frames, 2);
  EXPECT_EQ(c->session_output_bytes, 1ull << 20);
  EXPECT_EQ(c->input_queue_bytes, 4 << 20);
  EXPECT_EQ(c->workers, "cpu");
  EXPECT_EQ(c->gpu_slots, 2);
  EXPECT_EQ(c->cpu_threads, 4);
  EXPECT_EQ(c->decode_threads, 1);
  EXPECT_EQ(c->drain_timeout_s, 2.5);
}

TEST(ConfigFile, MissingKeysKeepDefaults) {
  auto c = ParseConfigToml("[limits]\nmax_sessions = 3\n", "t.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  DaemonConfig expected;
  expected.max_sessions = 3;
  EXPECT_EQ(*c, expected);
  auto empty = ParseConfigToml("", "empty.toml");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, DaemonConfig{});
  auto single = ParseConfigToml("[server]\nlisten = \"localhost:7\"\n", "t.toml");
  ASSERT_TRUE(single.ok()) << single.status().ToString();
  EXPECT_EQ(single->listen.size(), 1u);
}

TEST(ConfigFile, UnknownKeyIsAnErrorNamingIt) {
  ExpectError(ParseConfigToml("[limits]\nmax_sesions = 3\n", "c.toml").status(),
              StatusCode::kInvalidArgument, {"c.toml:2:", "limits.max_sesions", "unknown key"});
  ExpectError(ParseConfigToml("[server]\nmax_sessions = 3\n", "c.toml").status(),
              StatusCode::kInvalidArgument,
              {"server.max_sessions", "unknown key", "belongs in [limits]"});
  ExpectError(ParseConfigToml("[limit]\nmax_sessions = 3\n", "c.toml").status(),
              StatusCode::kInvalidArgument, {"limit", "unknown table"});
  ExpectError(ParseConfigToml("log_level = \"info\"\n", "c.toml").status(),
              StatusCode::kInvalidArgument, {"log_level", "unknown key"});
  ExpectError(ParseConfigToml("server = 1\n", "c.toml").status(), StatusCode::kInvalidArgument,
              {"server", "expected a table"});
}

// server.shared_memory was server.shared_memory_input while only frames went through
// shared memory. Files written then still load, and say so for the log.
TEST(ConfigFile, OldKeyNameIsReadAsTheNewOneWithANotice) {
  std::vector<std::string> notices;
  auto c = ParseConfigToml("[server]\nshared_memory_input = false\n", "c.toml", &notices);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->shared_memory);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("c.toml:2:"), std::string::npos) << notices[0];
  EXPECT_NE(notices[0].find("server.shared_memory_input is now named server.shared_memory"), std::string::npos)
      << notices[0];

  notices.clear();
  c = ParseConfigToml("[server]\nshared_memory = false\n", "c.toml", &notices);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->shared_memory);
  EXPECT_TRUE(notices.empty());

  // Both names at once could disagree: refused, whichever comes first.
  for (const char* text : {"[server]\nshared_memory_input = true\nshared_memory = false\n",
                           "[server]\nshared_memory = false\nshared_memory_input = true\n"}) {
    ExpectError(ParseConfigToml(text, "c.toml").status(), StatusCode::kInvalidArgument,
                {"server.shared_memory_input", "old name of server.shared_memory", "keep one"});
  }
  // The old name belongs to its table only, and takes the new one's type.
  ExpectError(ParseConfigToml("[limits]\nshared_memory_input = false\n", "c.toml").status(),
              StatusCode::kInvalidArgument, {"limits.shared_memory_input", "unknown key"});
  ExpectError(ParseConfigToml("[server]\nshared_memory_input = 1\n", "c.toml").status(),
              StatusCode::kInvalidArgument, {"server.shared_memory", "true or false"});
}

TEST(CommandLine, NoticesAboutTheFileComeBackForTheLog) {
  TempDir tmp;
  const std::string path = tmp.path() + "/c.toml";
  WriteWholeFile(path, "[server]\nshared_memory_input = false\n");
  auto cl = Parse({"--config", path}, "/nonexistent");
  ASSERT_TRUE(cl.ok()) << cl.status().ToString();
  EXPECT_FALSE(cl->config.shared_memory);
  ASSERT_EQ(cl->notices.size(), 1u);
  EXPECT_NE(cl->notices[0].find(path + ":2:"), std::string::npos) << cl->notices[0];
}

TEST(ConfigFile, WrongTypeNamesTheKey) {
  ExpectError(ParseConfigToml("[limits]\n\nmax_sessions = \"64\"\n", "c.toml").status(),
              StatusCode::kInvalidArgument,
              {"c.toml:3:", "limits.max_sessions", "expected an integer, got a string"});
  ExpectError(ParseConfigToml("[limits]\nmax_width = 1.5\n", "c.toml").status(),
              StatusCode::kInvalidArgument, {"limits.max_width", "got a float"});
  ExpectError(ParseConfigToml("[server]\nallow_insecure_tcp = 1\n", "c.toml").status(),
              StatusCode::kInvalidArgument, {"server.allow_insecure_tcp", "true or false"});
  ExpectError(ParseConfigToml("[server]\nlisten = [1]\n", "c.toml").status(),
              StatusCode::kInvalidArgument, {"server.listen", "array of strings"});
  ExpectError(ParseConfigToml("[workers]\ndrain_timeout_s = \"30s\"\n", "c.toml").status(),
              StatusCode::kInvalidArgument, {"workers.drain_timeout_s", "expected a number"});
  ExpectError(ParseConfigToml("[limits]\nmax_session_bytes = -1\n", "c.toml").status(),
              StatusCode::kInvalidArgument, {"limits.max_session_bytes", "negative"});
  ExpectError(ParseConfigToml("[limits]\nmax_sessions = 99999999999\n", "c.toml").status(),
              StatusCode::kInvalidArgument, {"limits.max_sessions", "out of range"});
}

TEST(ConfigFile, BadValuesAndSyntax) {
  ExpectError(ParseConfigToml("[limits]\nmax_sessions = 0\n", "c.toml").status(),
              StatusCode::kInvalidArgument, {"c.toml", "limits.max_sessions", "out of range"});
  ExpectError(ParseConfigToml("[workers]\ngpu_slots = 65\n", "c.toml").status(),
              StatusCode::kInvalidArgument, {"workers.gpu_slots", "65"});
  ExpectError(ParseConfigToml("[server]\nlisten = [\"localhost\"]\n", "c.toml").status(),
              StatusCode::kInvalidArgument, {"c.toml:2:", "server.listen", "'localhost'"});
  ExpectError(ParseConfigToml("[server]\nlisten = [\"0.0.0.0:1\"]\n", "c.toml").status(),
              StatusCode::kInvalidArgument, {"allow_insecure_tcp"});
  ExpectError(ParseConfigToml("[limits\nmax_sessions = 1\n", "c.toml").status(),
              StatusCode::kInvalidArgument, {"c.toml:1:"});
  ExpectError(ParseConfigToml("[limits]\nmax_sessions = 1\nmax_sessions = 2\n", "c.toml").status(),
              StatusCode::kInvalidArgument, {"c.toml:3:"});
}

TEST(ConfigFile, LoadFromDisk) {
  TempDir tmp;
  const std::string path = tmp.path() + "/conveyord.toml";
  WriteWholeFile(path, "[workers]\nworkers = \"gpu\"\n");
  auto c = LoadConfigFile(path);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->workers, "gpu");
  ExpectError(LoadConfigFile(tmp.path() + "/missing.toml").status(), StatusCode::kNotFound,
              {"missing.toml"});
  WriteWholeFile(path, "[workers]\nworkers = 3\n");
  ExpectError(LoadConfigFile(path).status(), StatusCode::kInvalidArgument,
              {path + ":2:", "workers.workers"});
}

TEST(ConfigFile, RenderLoadsBackEqual) {
  DaemonConfig c;
  c.listen = {*ParseListenAddress("unix:/run/conveyor/a \"quoted\".sock"),
              *ParseListenAddress("[::]:50051")};
  c.allow_insecure_tcp = true;
  c.metrics_listen = "";
  c.log_level = "warn";
  c.max_sessions = 7;
  c.max_frame_rate = 29.97;
  c.max_session_bytes = 123456789;
  c.idle_timeout_s = 0.1;
  c.session_output_bytes = 3ull << 20;
  c.workers = "gpu";
  c.drain_timeout_s = 0;
  const std::string text = RenderConfigToml(c);
  auto back = ParseConfigToml(text, "rendered.toml");
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << text;
  EXPECT_EQ(*back, c) << text;
  EXPECT_NE(text.find("# Default: 64\nmax_sessions = 7\n"), std::string::npos) << text;
  EXPECT_NE(text.find("session_output_bytes = 3145728  # 3 MiB"), std::string::npos) << text;
  EXPECT_NE(RenderConfigToml(DaemonConfig{}), text);
}

// ---- Every field of DaemonConfig is an option in kFields ----

// Converts to any member type, so that DaemonConfig{AnyMember{}, ...} compiles with as
// many initialisers as the struct has members, and not with one more. Declared only: it
// is used in unevaluated operands.
struct AnyMember {
  template <class T>
  operator T() const;
};

template <class T, class Indices, class = void>
struct BraceInitialisable : std::false_type {};
template <class T, size_t... I>
struct BraceInitialisable<T, std::index_sequence<I...>, std::void_t<decltype(T{(void(I), AnyMember{})...})>>
    : std::true_type {};

// The number of members of the aggregate T.
template <class T, size_t N = 0>
constexpr size_t MemberCount() {
  if constexpr (BraceInitialisable<T, std::make_index_sequence<N + 1>>::value) {
    return MemberCount<T, N + 1>();
  } else {
    return N;
  }
}

// A member added to DaemonConfig without a row in kFields would be missing from the file,
// the flags, equality (which walks the table) and deploy/conveyord.toml. With the
// distinct-members check below, equal counts mean every member has its row.
static_assert(std::is_aggregate_v<DaemonConfig>, "MemberCount needs DaemonConfig to stay an aggregate");
static_assert(MemberCount<DaemonConfig>() == std::extent_v<decltype(kFields)>,
              "DaemonConfig and kFields (daemon/config/config_fields.h) differ in their number of fields: "
              "give the new member its row in kFields");

size_t OffsetOf(const Member& member) {
  static const DaemonConfig c;
  return std::visit(
      [](auto m) {
        return static_cast<size_t>(reinterpret_cast<const char*>(&(c.*m)) - reinterpret_cast<const char*>(&c));
      },
      member);
}

// Moves one field away from its value in `c`.
void Perturb(DaemonConfig& c, const Member& member) {
  std::visit(Overloaded{
                 [&](bool DaemonConfig::*m) { c.*m = !(c.*m); },
                 [&](int DaemonConfig::*m) { c.*m += 1; },
                 [&](uint64_t DaemonConfig::*m) { c.*m += 1; },
                 [&](double DaemonConfig::*m) { c.*m += 0.5; },
                 [&](std::string DaemonConfig::*m) { c.*m += "-changed"; },
                 [&](Addresses DaemonConfig::*m) { (c.*m).push_back(*ParseListenAddress("127.0.0.1:50051")); },
             },
             member);
}

TEST(ConfigFile, EveryFieldHasItsOwnRowInTheTable) {
  std::set<size_t> offsets;
  for (const Field& f : kFields) {
    EXPECT_TRUE(offsets.insert(OffsetOf(f.member)).second) << FieldName(f) << ": another row has its member";
  }
  EXPECT_EQ(offsets.size(), MemberCount<DaemonConfig>());
}

TEST(ConfigFile, EqualityCoversEveryField) {
  // Each field moved away from its default makes the config differ, is the one setting
  // named as changed, and shows in the rendered file.
  const DaemonConfig d;
  EXPECT_EQ(d, DaemonConfig{});
  for (const Field& f : kFields) {
    SCOPED_TRACE(FieldName(f));
    DaemonConfig c;
    Perturb(c, f.member);
    EXPECT_NE(c, d);
    EXPECT_EQ(ChangedSettings(d, c), std::vector<std::string>{FieldName(f)});
    EXPECT_NE(RenderConfigToml(c), RenderConfigToml(d));
  }
}

// With CONVEYOR_UPDATE_DEPLOY_CONFIG=1 the test rewrites the committed file and fails,
// so that a run with the variable set can never pass by checking its own rewrite.
TEST(DeployConfig, CommittedFileIsTheRenderedDefault) {
  const std::string rendered = RenderConfigToml(DaemonConfig{});
  if (const char* update = std::getenv("CONVEYOR_UPDATE_DEPLOY_CONFIG"); update && *update == '1') {
    const bool was_current = ReadWholeFile(kDeployFile) == rendered;
    WriteWholeFile(kDeployFile, rendered);
    ASSERT_EQ(ReadWholeFile(kDeployFile), rendered) << "could not rewrite " << kDeployFile;
    FAIL() << "CONVEYOR_UPDATE_DEPLOY_CONFIG=1: rewrote " << kDeployFile
           << (was_current ? " (it was already current)" : "")
           << " and checked nothing. Review the change, then run the test again without the variable.";
  }
  const std::string committed = ReadWholeFile(kDeployFile);
  EXPECT_EQ(committed, rendered)
      << kDeployFile << " differs from RenderConfigToml(DaemonConfig{}). Rewrite it with\n"
      << "  CONVEYOR_UPDATE_DEPLOY_CONFIG=1 config_tests --gtest_filter=DeployConfig.CommittedFileIsTheRenderedDefault\n"
      << "(that run fails on purpose), then run the tests again without the variable.\n";
}

TEST(DeployConfig, CommittedFileLoadsAsTheDefaults) {
  auto c = LoadConfigFile(kDeployFile);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(*c, DaemonConfig{});
}

// ---- The command line ----

TEST(CommandLine, NoFlagsNoFile) {
  TempDir tmp;
  auto cl = Parse({}, tmp.path() + "/none.toml");
  ASSERT_TRUE(cl.ok()) << cl.status().ToString();
  EXPECT_FALSE(cl->exit_now);
  EXPECT_TRUE(cl->config_path.empty());
  EXPECT_EQ(cl->config, DaemonConfig{});
}

TEST(CommandLine, FlagsOverrideTheFile) {
  TempDir tmp;
  const std::string path = tmp.path() + "/c.toml";
  WriteWholeFile(path, R"(
[server]
listen = ["unix:/tmp/from-file.sock", "localhost:1"]
log_level = "debug"
[limits]
max_sessions = 5
idle_timeout_s = 9
max_width = 1280
[workers]
gpu_slots = 4
)");
  auto cl = Parse({"--config",        path,          "--max-sessions",   "11",
                   "--listen",        "127.0.0.1:0", "--listen",         "unix:/tmp/flag.sock",
                   "--log-level",     "warn",        "--idle-timeout",   "2.5",
                   "--workers",       "cpu",         "--cpu-threads",    "3",
                   "--drain-timeout", "1",           "--metrics-listen", "127.0.0.1:0"},
                  "/nonexistent");
  ASSERT_TRUE(cl.ok()) << cl.status().ToString();
  const DaemonConfig& c = cl->config;
  EXPECT_EQ(cl->config_path, path);
  EXPECT_EQ(c.max_sessions, 11);
  ASSERT_EQ(c.listen.size(), 2u);  // --listen replaces the file's list
  EXPECT_EQ(c.listen[0].ToString(), "127.0.0.1:0");
  EXPECT_EQ(c.listen[1].ToString(), "unix:/tmp/flag.sock");
  EXPECT_EQ(c.log_level, "warn");
  EXPECT_EQ(c.idle_timeout_s, 2.5);
  EXPECT_EQ(c.workers, "cpu");
  EXPECT_EQ(c.cpu_threads, 3);
  EXPECT_EQ(c.drain_timeout_s, 1.0);
  EXPECT_EQ(c.metrics_listen, "127.0.0.1:0");
  EXPECT_EQ(c.max_width, 1280);  // from the file, no flag for it
  EXPECT_EQ(c.gpu_slots, 4);
}

TEST(CommandLine, DefaultFileIsReadWhenPresentAndSkippedWithEmptyConfig) {
  TempDir tmp;
  const std::string path = tmp.path() + "/conveyord.toml";
  WriteWholeFile(path, "[limits]\nmax_sessions = 2\n");
  auto cl = Parse({}, path);
  ASSERT_TRUE(cl.ok()) << cl.status().ToString();
  EXPECT_EQ(cl->config_path, path);
  EXPECT_EQ(cl->config.max_sessions, 2);
  cl = Parse({"--config", ""}, path);
  ASSERT_TRUE(cl.ok()) << cl.status().ToString();
  EXPECT_TRUE(cl->config_path.empty());
  EXPECT_EQ(cl->config.max_sessions, 64);
}

TEST(CommandLine, Errors) {
  TempDir tmp;
  const std::string none = tmp.path() + "/none.toml";
  ExpectError(Parse({"--config", tmp.path() + "/missing.toml"}, none).status(),
              StatusCode::kNotFound, {"missing.toml"});
  ExpectError(Parse({"--max-sessions", "many"}, none).status(), StatusCode::kInvalidArgument,
              {"--max-sessions", "'many'"});
  ExpectError(Parse({"--max-sessions", "0"}, none).status(), StatusCode::kInvalidArgument,
              {"limits.max_sessions"});
  ExpectError(Parse({"--idle-timeout", "soon"}, none).status(), StatusCode::kInvalidArgument,
              {"--idle-timeout"});
  ExpectError(Parse({"--listen", "nowhere"}, none).status(), StatusCode::kInvalidArgument,
              {"--listen", "'nowhere'"});
  ExpectError(Parse({"--listen", "0.0.0.0:1"}, none).status(), StatusCode::kInvalidArgument,
              {"allow_insecure_tcp"});
  EXPECT_TRUE(Parse({"--listen", "0.0.0.0:1", "--allow-insecure-tcp"}, none).ok());
  ExpectError(Parse({"--no-such-flag"}, none).status(), StatusCode::kInvalidArgument,
              {"--no-such-flag"});
  ExpectError(Parse({"stray"}, none).status(), StatusCode::kInvalidArgument, {"stray"});
  ExpectError(Parse({"--log-level", "chatty"}, none).status(), StatusCode::kInvalidArgument,
              {"chatty"});
  WriteWholeFile(tmp.path() + "/bad.toml", "[limits]\nbogus = 1\n");
  ExpectError(Parse({"--config", tmp.path() + "/bad.toml"}, none).status(),
              StatusCode::kInvalidArgument, {"bad.toml:2:", "limits.bogus"});
}

TEST(CommandLine, HelpVersionAndPrintConfigExitNow) {
  const std::string none = "/nonexistent/conveyord.toml";
  auto help = Parse({"--help"}, none);
  ASSERT_TRUE(help.ok()) << help.status().ToString();
  EXPECT_TRUE(help->exit_now);
  EXPECT_EQ(help->exit_code, 0);
  for (const char* flag : {"--config", "--listen", "--metrics-listen", "--log-level",
                           "--max-sessions", "--workers", "--gpu-slots", "--cpu-threads",
                           "--idle-timeout", "--drain-timeout", "--version", "--print-config"}) {
    EXPECT_NE(help->output.find(flag), std::string::npos) << flag << "\n" << help->output;
  }
  // The subcommand, which is not a flag, is named too.
  EXPECT_NE(help->output.find("conveyord doctor"), std::string::npos) << help->output;
  auto version = Parse({"--version"}, none);
  ASSERT_TRUE(version.ok());
  EXPECT_TRUE(version->exit_now);
  EXPECT_EQ(version->exit_code, 0);
  EXPECT_EQ(version->output, std::string("conveyord ") + ConveyorVersion() + "\n");
  auto print = Parse({"--print-config", "--max-sessions", "9"}, none);
  ASSERT_TRUE(print.ok()) << print.status().ToString();
  EXPECT_TRUE(print->exit_now);
  DaemonConfig expected;
  expected.max_sessions = 9;
  EXPECT_EQ(print->output, RenderConfigToml(expected));
}

// The soak test's fault hook: hidden from --help, off unless the environment allows test
// hooks, and a positive integer when it is on.
TEST(CommandLine, TestFaultFlagNeedsTheEnvironmentAndIsHidden) {
  const std::string none = "/nonexistent/conveyord.toml";
  unsetenv(kAllowTestHooksEnv);
  auto off = Parse({}, none);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->test_fault_every, 0);
  ExpectError(Parse({"--test-fault-every", "5"}, none).status(), StatusCode::kInvalidArgument,
              {"--test-fault-every", kAllowTestHooksEnv});
  setenv(kAllowTestHooksEnv, "1", 1);
  auto on = Parse({"--test-fault-every", "5"}, none);
  ASSERT_TRUE(on.ok()) << on.status().ToString();
  EXPECT_EQ(on->test_fault_every, 5);
  ExpectError(Parse({"--test-fault-every", "0"}, none).status(), StatusCode::kInvalidArgument,
              {"--test-fault-every", "out of range"});
  ExpectError(Parse({"--test-fault-every", "x"}, none).status(), StatusCode::kInvalidArgument,
              {"--test-fault-every", "not an integer"});
  unsetenv(kAllowTestHooksEnv);
  auto help = Parse({"--help"}, none);
  ASSERT_TRUE(help.ok());
  EXPECT_EQ(help->output.find("--test-fault-every"), std::string::npos) << help->output;
}

}  // namespace
}  // namespace conveyor::config
