// Listen addresses: the accepted spellings, the errors for bad ones, the default socket
// path's fallbacks, and preparing a unix socket's directory.
#include "listen_address.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "config_test_util.h"

namespace conveyor::config {
namespace {

using Kind = ListenAddress::Kind;

ListenAddress MustParse(const std::string& text) {
  auto a = ParseListenAddress(text);
  EXPECT_TRUE(a.ok()) << text << ": " << a.status().ToString();
  return a.ok() ? *a : ListenAddress{};
}

TEST(ListenAddress, UnixAbsolute) {
  const ListenAddress a = MustParse("unix:/run/conveyor/conveyord.sock");
  EXPECT_EQ(a.kind, Kind::kUnix);
  EXPECT_EQ(a.path, "/run/conveyor/conveyord.sock");
  EXPECT_EQ(a.GrpcTarget(), "unix:/run/conveyor/conveyord.sock");
  EXPECT_EQ(a.ToString(), "unix:/run/conveyor/conveyord.sock");
  EXPECT_TRUE(a.IsLoopback());
}

TEST(ListenAddress, UnixSpellings) {
  EXPECT_EQ(MustParse("unix:///tmp/x.sock").path, "/tmp/x.sock");
  EXPECT_EQ(MustParse("/tmp/x.sock").path, "/tmp/x.sock");
  EXPECT_EQ(MustParse("unix:/tmp/a/../b/./x.sock").path, "/tmp/b/x.sock");
  EXPECT_EQ(MustParse("/tmp/x.sock"), MustParse("unix:/tmp/x.sock"));
}

TEST(ListenAddress, UnixRelativeIsMadeAbsolute) {
  const std::string cwd = std::filesystem::current_path().string();
  const ListenAddress a = MustParse("unix:sub/c.sock");
  EXPECT_EQ(a.path, (std::filesystem::path(cwd) / "sub/c.sock").lexically_normal().string());
  EXPECT_EQ(a.path.front(), '/');
}

TEST(ListenAddress, Tcp) {
  ListenAddress a = MustParse("127.0.0.1:50051");
  EXPECT_EQ(a.kind, Kind::kTcp);
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 50051);
  EXPECT_EQ(a.GrpcTarget(), "127.0.0.1:50051");
  EXPECT_TRUE(a.IsLoopback());

  a = MustParse("localhost:0");
  EXPECT_EQ(a.host, "localhost");
  EXPECT_EQ(a.port, 0);
  EXPECT_TRUE(a.IsLoopback());

  a = MustParse("[::1]:7000");
  EXPECT_EQ(a.host, "::1");
  EXPECT_EQ(a.port, 7000);
  EXPECT_EQ(a.GrpcTarget(), "[::1]:7000");
  EXPECT_TRUE(a.IsLoopback());

  a = MustParse("0.0.0.0:50051");
  EXPECT_FALSE(a.IsLoopback());
  a = MustParse("[::]:65535");
  EXPECT_EQ(a.port, 65535);
  EXPECT_FALSE(a.IsLoopback());
  a = MustParse("transcode-1.example.com:443");
  EXPECT_EQ(a.host, "transcode-1.example.com");
  EXPECT_FALSE(a.IsLoopback());
  EXPECT_TRUE(MustParse("127.1.2.3:1").IsLoopback());
  EXPECT_TRUE(MustParse("[::ffff:127.0.0.1]:1").IsLoopback());
  EXPECT_FALSE(MustParse("127.example.com:1").IsLoopback());
}

TEST(ListenAddress, ToStringRoundTrips) {
  for (const char* text :
       {"unix:/run/x.sock", "localhost:9", "[::1]:8", "10.0.0.1:50051", "[fe80::1%eth0]:1"}) {
    auto a = ParseListenAddress(text);
    if (!a.ok()) continue;  // the zone id is not accepted; the others must round-trip
    EXPECT_EQ(MustParse(a->ToString()), *a) << text;
  }
}

TEST(ListenAddress, BadAddressesNameTheText) {
  for (const char* text :
       {"unix:", "unix://", "localhost", "localhost:", "localhost:http", "localhost:65536",
        "localhost:-1", "localhost:123456", "::1:50051", "[::1]50051", "[::1", "[]:1",
        "[nothost]:1", ":50051", "host name:1", "host/x:1", "unix:/tmp/dir/"}) {
    auto a = ParseListenAddress(text);
    ASSERT_FALSE(a.ok()) << text << " parsed as " << a->ToString();
    EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(a.status().message().find(std::string("'") + text + "'"), std::string::npos)
        << a.status().message();
  }
  EXPECT_FALSE(ParseListenAddress("").ok());
  auto v6 = ParseListenAddress("::1:50051");
  EXPECT_NE(v6.status().message().find("brackets"), std::string::npos);
}

TEST(ListenAddress, UnixPathLengthLimit) {
  const std::string dir = "/tmp/" + std::string(100, 'd');
  auto a = ParseListenAddress("unix:" + dir + "/conveyord.sock");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("107"), std::string::npos) << a.status().message();
  EXPECT_TRUE(ParseListenAddress("unix:/tmp/" + std::string(kMaxUnixPathBytes - 5, 'x')).ok());
  EXPECT_FALSE(ParseListenAddress("unix:/tmp/" + std::string(kMaxUnixPathBytes - 4, 'x')).ok());
}

// ---- The default socket ----

TEST(DefaultSocketPath, SystemDirWinsWhenWritable) {
  TempDir tmp;
  ScopedEnv xdg("XDG_RUNTIME_DIR", "/run/user/1234");
  EXPECT_EQ(DefaultSocketPathIn(tmp.path()), tmp.path() + "/conveyord.sock");
}

TEST(DefaultSocketPath, XdgRuntimeDirWhenNoSystemDir) {
  TempDir tmp;
  ScopedEnv xdg("XDG_RUNTIME_DIR", "/run/user/1234/");
  EXPECT_EQ(DefaultSocketPathIn(tmp.path() + "/missing"), "/run/user/1234/conveyor/conveyord.sock");
}

TEST(DefaultSocketPath, TmpWhenNoXdg) {
  TempDir tmp;
  const std::string expected = "/tmp/conveyor-" + std::to_string(getuid()) + "/conveyord.sock";
  {
    ScopedEnv xdg("XDG_RUNTIME_DIR", std::nullopt);
    EXPECT_EQ(DefaultSocketPathIn(tmp.path() + "/missing"), expected);
  }
  {
    ScopedEnv xdg("XDG_RUNTIME_DIR", "");
    EXPECT_EQ(DefaultSocketPathIn(tmp.path() + "/missing"), expected);
  }
}

TEST(DefaultSocketPath, SystemDirSkippedWhenNotADirectory) {
  TempDir tmp;
  ScopedEnv xdg("XDG_RUNTIME_DIR", "/xdg");
  const std::string file = tmp.path() + "/file";
  std::ofstream(file) << "x";
  EXPECT_EQ(DefaultSocketPathIn(file), "/xdg/conveyor/conveyord.sock");
}

TEST(DefaultSocketPath, SystemDirSkippedWhenNotWritable) {
  if (geteuid() == 0) GTEST_SKIP() << "root may write to any directory; this needs a user";
  TempDir tmp;
  ScopedEnv xdg("XDG_RUNTIME_DIR", "/xdg");
  const std::string ro = tmp.path() + "/ro";
  ASSERT_EQ(mkdir(ro.c_str(), 0500), 0);
  EXPECT_EQ(DefaultSocketPathIn(ro), "/xdg/conveyor/conveyord.sock");
}

TEST(DefaultSocketPath, PublicFunctionUsesRunConveyor) {
  EXPECT_EQ(DefaultSocketPath(), DefaultSocketPathIn("/run/conveyor"));
  const ListenAddress a = DefaultListenAddress();
  EXPECT_EQ(a.kind, Kind::kUnix);
  EXPECT_EQ(a.path, DefaultSocketPath());
}

// ---- Preparing a unix socket ----

int BindUnix(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, path.c_str(), sizeof(sa.sun_path) - 1);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0) << std::strerror(errno);
  return fd;
}

TEST(PrepareUnixSocket, CreatesPrivateDirectory) {
  TempDir tmp;
  const ListenAddress a = MustParse("unix:" + tmp.path() + "/run/conveyord.sock");
  ASSERT_TRUE(PrepareUnixSocket(a).ok());
  struct stat st;
  ASSERT_EQ(stat((tmp.path() + "/run").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(PrepareUnixSocket(a).ok());  // again: the directory is there
}

TEST(PrepareUnixSocket, RemovesStaleSocketButNotALiveOne) {
  TempDir tmp;
  const std::string path = tmp.path() + "/c.sock";
  const ListenAddress a = MustParse("unix:" + path);

  const int stale = BindUnix(path);
  close(stale);  // bound, never listened, closed: what a crashed daemon leaves
  ASSERT_TRUE(std::filesystem::exists(path));
  ASSERT_TRUE(PrepareUnixSocket(a).ok());
  EXPECT_FALSE(std::filesystem::exists(path));

  const int live = BindUnix(path);
  ASSERT_EQ(listen(live, 1), 0);
  const Status s = PrepareUnixSocket(a);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("another process"), std::string::npos) << s.message();
  EXPECT_TRUE(std::filesystem::exists(path));
  close(live);
}

TEST(PrepareUnixSocket, RefusesRegularFileAndOpenDirectory) {
  TempDir tmp;
  std::ofstream(tmp.path() + "/file.sock") << "not a socket";
  Status s = PrepareUnixSocket(MustParse("unix:" + tmp.path() + "/file.sock"));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("not a socket"), std::string::npos) << s.message();

  const std::string open_dir = tmp.path() + "/open";
  ASSERT_EQ(mkdir(open_dir.c_str(), 0700), 0);
  ASSERT_EQ(chmod(open_dir.c_str(), 0777), 0);
  s = PrepareUnixSocket(MustParse("unix:" + open_dir + "/c.sock"));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("writable by group or others"), std::string::npos) << s.message();

  ASSERT_EQ(chmod(open_dir.c_str(), 01777), 0);  // sticky, like /tmp: fine
  EXPECT_TRUE(PrepareUnixSocket(MustParse("unix:" + open_dir + "/c.sock")).ok());
  EXPECT_TRUE(PrepareUnixSocket(MustParse("localhost:1")).ok());  // TCP: nothing to do
}

}  // namespace
}  // namespace conveyor::config
