// The unix socket's permissions: mode 0660 from the moment it is bound, and the group
// named by server.socket_group when that group exists, so that its members may connect. A
// group that does not exist is no error: the socket keeps the daemon's group.
#include <grp.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "daemon_process.h"
#include "scoped_umask.h"
#include "security_test_util.h"
#include "unique_fd.h"

namespace conveyor::security_test {
namespace {

using e2e::DaemonProcess;
using e2e::MakeTempDir;
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

// The mode each file had when it appeared in a directory: an inotify watch on the
// directory stats every new name as soon as its creation is reported.
class CreationModes {
 public:
  explicit CreationModes(const std::string& dir) : dir_(dir), fd_(inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) {
    watching_ = fd_.valid() && inotify_add_watch(fd_.get(), dir.c_str(), IN_CREATE) >= 0;
    if (watching_) thread_ = std::thread([this] { Loop(); });
  }
  ~CreationModes() { Stop(); }
  CreationModes(const CreationModes&) = delete;
  CreationModes& operator=(const CreationModes&) = delete;

  bool watching() const { return watching_; }
  // Ends the watch; the modes seen until then.
  std::map<std::string, mode_t> Stop() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
    return modes_;
  }

 private:
  void Loop() {
    alignas(inotify_event) char buffer[4096];
    while (!done_) {
      pollfd p{fd_.get(), POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      const ssize_t n = read(fd_.get(), buffer, sizeof buffer);
      for (ssize_t at = 0; at < n;) {
        const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
        if (event->len > 0) {
          struct stat st {};
          if (lstat((dir_ + "/" + event->name).c_str(), &st) == 0) modes_.emplace(event->name, st.st_mode & 07777);
        }
        at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      }
    }
  }

  std::string dir_;
  UniqueFd fd_;
  bool watching_ = false;
  std::atomic<bool> done_{false};
  std::map<std::string, mode_t> modes_;
  std::thread thread_;
};

// Under a umask of 0 a file made with mode 0777 keeps it: a socket chmodded after bind
// shows 0777 to a client that is quick, one bound under the right umask never does.
TEST(SocketGroup, TheSocketIsBoundWithMode0660WhateverTheUmask) {
  const std::string dir = MakeTempDir();
  CreationModes seen(dir);
  ASSERT_TRUE(seen.watching()) << "inotify on " << dir << ": " << std::strerror(errno);
  std::map<std::string, mode_t> modes;
  {
    const ScopedUmask open_mask(0);  // the daemon inherits it
    DaemonProcess daemon({"--listen", "unix:" + dir + "/conveyord.sock"});
    ASSERT_TRUE(daemon.ready());
    EXPECT_TRUE(CallStatus(grpc::CreateChannel("unix:" + dir + "/conveyord.sock",
                                               grpc::InsecureChannelCredentials())).ok());
    modes = seen.Stop();
    struct stat attach {};
    ASSERT_EQ(stat((daemon.dir() + "/conveyord.frames.sock").c_str(), &attach), 0) << "no attach socket";
    EXPECT_EQ(attach.st_mode & 0777, 0660u) << "the attach socket";
  }
  ASSERT_EQ(modes.count("conveyord.sock"), 1u) << "the socket's creation was not seen";
  EXPECT_EQ(modes["conveyord.sock"] & 0777, 0660u) << std::oct << modes["conveyord.sock"];
  Shell("rm -rf '" + dir + "'");
}

}  // namespace
}  // namespace conveyor::security_test
