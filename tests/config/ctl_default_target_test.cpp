// conveyorctl's default target, with a temporary directory standing in for /run/conveyor:
// the system socket wins when this user may connect to it, even without write
// permission on its directory (a member of the conveyor group, as the systemd unit
// sets it up); otherwise conveyorctl looks where conveyord started by this user would
// listen.
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "config_test_util.h"
#include "default_target.h"
#include "listen_address.h"
#include "unique_fd.h"

namespace conveyor::ctl {
namespace {

// A unix socket file at `path`, as a listening daemon leaves it.
bool MakeSocketFile(const std::string& path) {
  const UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, path.c_str(), sizeof(sa.sun_path) - 1);
  return fd.valid() && bind(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) == 0;
}

// The system daemon's directory and socket as the systemd unit makes them: the
// directory 0750, the socket 0660, both of group `gid`.
std::string MakeSystemDir(const std::string& parent, gid_t gid) {
  const std::string dir = parent + "/run-conveyor";
  EXPECT_EQ(mkdir(dir.c_str(), 0750), 0);
  EXPECT_TRUE(MakeSocketFile(dir + "/conveyord.sock"));
  EXPECT_EQ(chmod((dir + "/conveyord.sock").c_str(), 0660), 0);
  EXPECT_EQ(chown((dir + "/conveyord.sock").c_str(), geteuid(), gid), 0);
  EXPECT_EQ(chown(dir.c_str(), geteuid(), gid), 0);
  EXPECT_EQ(chmod(dir.c_str(), 0750), 0);
  return dir;
}

// DefaultTargetSocketIn(system_dir) as another user would get it: as root, in a child
// that becomes uid and gid `uid` with the one supplementary group `group`; as anyone
// else, in this process (the caller has set the modes up so they tell).
std::string AsUser(const std::string& system_dir, uid_t uid, gid_t group) {
  if (geteuid() != 0) return DefaultTargetSocketIn(system_dir);
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    if (setgroups(1, &group) != 0 || setgid(uid) != 0 || setuid(uid) != 0) _exit(2);
    const std::string path = DefaultTargetSocketIn(system_dir);
    const bool wrote = write(fds[1], path.data(), path.size()) == static_cast<ssize_t>(path.size());
    _exit(wrote ? 0 : 3);
  }
  close(fds[1]);
  std::string got;
  char buf[256];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;) got.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "child failed, status " + std::to_string(status);
  return got;
}

constexpr uid_t kNobody = 65534;
constexpr gid_t kConveyorGroup = 4242;  // stands in for the conveyor group

TEST(CtlDefaultTarget, TheSystemSocketWinsForAGroupMemberWhoMayNotWriteItsDirectory) {
  TempDir tmp;
  ScopedEnv xdg("XDG_RUNTIME_DIR", std::string("/run/user/65534"));
  ASSERT_EQ(chmod(tmp.path().c_str(), 0711), 0);  // the other user may pass through
  const std::string dir = MakeSystemDir(tmp.path(), geteuid() == 0 ? kConveyorGroup : getegid());
  if (geteuid() != 0) {
    ASSERT_EQ(chmod(dir.c_str(), 0550), 0);  // search, no write, for us too
  }
  EXPECT_EQ(AsUser(dir, kNobody, kConveyorGroup), dir + "/conveyord.sock");
  ASSERT_EQ(chmod(dir.c_str(), 0750), 0);  // for the clean-up
}

TEST(CtlDefaultTarget, AnotherUserFallsBackToThePerUserSocket) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root, to look as a user outside the group";
  TempDir tmp;
  ScopedEnv xdg("XDG_RUNTIME_DIR", std::string("/run/user/65534"));
  ASSERT_EQ(chmod(tmp.path().c_str(), 0711), 0);
  const std::string dir = MakeSystemDir(tmp.path(), kConveyorGroup);
  EXPECT_EQ(AsUser(dir, kNobody, kNobody), "/run/user/65534/conveyor/conveyord.sock");
  // In the group but the socket not writable by the group: no connection either.
  ASSERT_EQ(chmod((dir + "/conveyord.sock").c_str(), 0640), 0);
  EXPECT_EQ(AsUser(dir, kNobody, kConveyorGroup), "/run/user/65534/conveyor/conveyord.sock");
  // A file under the name that is not a socket does not count.
  ASSERT_EQ(unlink((dir + "/conveyord.sock").c_str()), 0);
  WriteWholeFile(dir + "/conveyord.sock", "not a socket");
  ASSERT_EQ(chmod((dir + "/conveyord.sock").c_str(), 0666), 0);
  EXPECT_EQ(AsUser(dir, kNobody, kConveyorGroup), "/run/user/65534/conveyor/conveyord.sock");
}

// What tells the rules apart, by an access check standing in for the kernel's: a user
// who may write the socket but not its directory.
bool SocketOnly(const std::string& path, int mode) {
  const bool is_socket = path.size() >= 15 && path.compare(path.size() - 15, 15, "/conveyord.sock") == 0;
  return is_socket || (mode & W_OK) == 0;
}
bool Nothing(const std::string&, int) { return false; }

TEST(CtlDefaultTarget, WritePermissionOnTheSocketDecidesNotOnTheDirectory) {
  TempDir tmp;
  ScopedEnv xdg("XDG_RUNTIME_DIR", std::string("/run/user/1000"));
  const std::string dir = MakeSystemDir(tmp.path(), getegid());
  EXPECT_EQ(DefaultTargetSocketIn(dir, SocketOnly), dir + "/conveyord.sock");
  // Not allowed to connect: where this user's own daemon would listen. (As root that is
  // the system directory again, which root may write.)
  EXPECT_EQ(DefaultTargetSocketIn(dir, Nothing), config::DefaultSocketPathIn(dir));
}

TEST(CtlDefaultTarget, WithoutASystemSocketItIsWhereThisUsersDaemonWouldListen) {
  TempDir tmp;
  {
    ScopedEnv xdg("XDG_RUNTIME_DIR", std::string("/run/user/1000/"));
    EXPECT_EQ(DefaultTargetSocketIn(tmp.path() + "/missing"), "/run/user/1000/conveyor/conveyord.sock");
  }
  {
    ScopedEnv xdg("XDG_RUNTIME_DIR", std::nullopt);
    EXPECT_EQ(DefaultTargetSocketIn(tmp.path() + "/missing"),
              "/tmp/conveyor-" + std::to_string(getuid()) + "/conveyord.sock");
  }
  // The directory there, the socket not (the daemon is stopped): the same choice as the
  // daemon's, which for a user who may write the directory is the directory.
  ScopedEnv xdg("XDG_RUNTIME_DIR", std::string("/run/user/1000"));
  EXPECT_EQ(DefaultTargetSocketIn(tmp.path()), config::DefaultSocketPathIn(tmp.path()));
}

}  // namespace
}  // namespace conveyor::ctl
