// The unix socket's permissions: mode 0660, and the group named by
// server.socket_group when that group exists, so that its members may connect. A group
// that does not exist is no error: the socket keeps the daemon's group.
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "daemon_process.h"
#include "security_test_util.h"

namespace conveyor::security_test {
namespace {

using e2e::DaemonProcess;
using e2e::Shell;

// A system group made with groupadd for one test and removed with groupdel after it.
class ScopedGroup {
 public:
  explicit ScopedGroup(std::string name) : name_(std::move(name)) {
    created_ = Shell("groupadd '" + name_ + "' 2>/dev/null") == 0;
  }
  ~ScopedGroup() {
    if (created_) Shell("groupdel '" + name_ + "'");
  }
  ScopedGroup(const ScopedGroup&) = delete;
  ScopedGroup& operator=(const ScopedGroup&) = delete;

  bool created() const { return created_; }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  bool created_ = false;
};

// The socket file's stat once it has mode 0660: the daemon answers calls a moment before
// it sets the mode and group after binding, so readiness alone does not order them.
struct stat SocketStat(const DaemonProcess& daemon) {
  const std::string path = daemon.dir() + "/conveyord.sock";
  struct stat st {};
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (stat(path.c_str(), &st) != 0 || (st.st_mode & 0777) != 0660) {
    if (std::chrono::steady_clock::now() > give_up) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return st;
}

// A group name nobody has: "cvt" and this process's id.
std::string UnusedGroupName() {
  std::string name = "cvt" + std::to_string(getpid());
  while (getgrnam(name.c_str()) != nullptr) name += "x";
  return name;
}

TEST(SocketGroup, TheSocketIsMode0660AndBelongsToTheConfiguredGroup) {
  if (geteuid() != 0) {
    GTEST_SKIP() << "needs root to create a group (groupadd) and to give the socket to it; running as uid "
                 << geteuid();
  }
  if (Shell("command -v groupadd >/dev/null && command -v groupdel >/dev/null") != 0) {
    GTEST_SKIP() << "groupadd and groupdel are not on the PATH (package passwd)";
  }
  ScopedGroup group(UnusedGroupName());
  ASSERT_TRUE(group.created()) << "groupadd " << group.name() << " failed";
  const struct group* entry = getgrnam(group.name().c_str());
  ASSERT_NE(entry, nullptr) << group.name() << " was added but is not found";
  const gid_t gid = entry->gr_gid;
  ASSERT_NE(gid, getegid()) << "a new group has the daemon's own gid";

  DaemonProcess daemon({"--socket-group", group.name()});
  ASSERT_TRUE(daemon.ready());
  const struct stat st = SocketStat(daemon);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  EXPECT_EQ(st.st_gid, gid);
  EXPECT_EQ(st.st_uid, geteuid()) << "the owner stays the daemon's user";
  EXPECT_TRUE(CallStatus(daemon.Channel()).ok());
}

TEST(SocketGroup, AGroupThatDoesNotExistLeavesTheDaemonsGroup) {
  const std::string missing = UnusedGroupName();
  DaemonProcess daemon({"--socket-group", missing});
  ASSERT_TRUE(daemon.ready()) << "a missing group must not stop the daemon";
  const struct stat st = SocketStat(daemon);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  EXPECT_EQ(st.st_gid, getegid());
  EXPECT_TRUE(CallStatus(daemon.Channel()).ok());
}

}  // namespace
}  // namespace conveyor::security_test
