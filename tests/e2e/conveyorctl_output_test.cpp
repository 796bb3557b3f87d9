// End-to-end: what the real conveyorctl leaves at its output path when a transcode does
// not finish. It is killed by a signal, the daemon is killed, or the daemon's drain
// times out, all mid-stream, while its input (a pipe this test holds open) is still
// coming. Without --keep-partial nothing is left, no hidden temporary file either;
// with it the partial file is at the requested path. A reader of stdout that goes away
// is a reported failure.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "daemon_process.h"
#include "test_files.h"

#ifdef CONVEYORCTL_PATH

namespace conveyor::e2e {
namespace {

using conveyor::testing::ReadText;

// 600 frames of H.264, so a session is far from done when a test cuts it.
const std::string& LongInput() {
  static const std::string path = [] {
    const std::string dir = MakeTempDir();
    const std::string p = dir + "/long.mkv";
    if (Shell("ffmpeg -loglevel error -y -f lavfi -i testsrc2=size=320x240:rate=25 -frames:v 600 -c:v libx264 "
              "-pix_fmt yuv420p " + p) != 0) {
      return std::string();
    }
    return p;
  }();
  return path;
}

// conveyorctl as a child process: stdin from a pipe that this object holds open (the
// input is still coming until Close()), stdout and stderr to files in `dir`.
class Conveyorctl {
 public:
  Conveyorctl(const std::string& dir, const std::vector<std::string>& args) : dir_(dir) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[0], STDIN_FILENO);
      const int out = open((dir + "/ctl.out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int err = open((dir + "/ctl.err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(out, STDOUT_FILENO);
      dup2(err, STDERR_FILENO);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      std::vector<std::string> all = {CONVEYORCTL_PATH};
      all.insert(all.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (std::string& a : all) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(fds[0]);
    input_ = fds[1];
  }
  ~Conveyorctl() {
    Close();
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  Conveyorctl(const Conveyorctl&) = delete;
  Conveyorctl& operator=(const Conveyorctl&) = delete;

  bool started() const { return pid_ > 0 && input_ >= 0; }
  pid_t pid() const { return pid_; }
  bool Feed(const std::string& bytes) {
    for (size_t done = 0; done < bytes.size();) {
      const ssize_t n = write(input_, bytes.data() + done, bytes.size() - done);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }
  void Close() {
    if (input_ >= 0) close(input_);
    input_ = -1;
  }
  // The wait status once it has exited; -1 when it did not within `timeout_s`.
  int Wait(double timeout_s) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < give_up) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return status;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }
  std::string Err() const { return ReadText(dir_ + "/ctl.err"); }

 private:
  std::string dir_;
  pid_t pid_ = -1;
  int input_ = -1;
};

// conveyorctl's stdout and stderr, which the test keeps in the output's directory.
bool IsCapturedStream(const std::string& name) { return name == "ctl.out" || name == "ctl.err"; }

// Names in `dir` but the test's own files.
std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (!IsCapturedStream(name)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Waits up to 60 s for `ready` to hold.
bool WaitFor(const std::function<bool()>& ready) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < give_up) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// Output has come: some of it is on disk under a name in `out_dir` (conveyorctl's own
// streams don't count). stdio writes a file in blocks of 4 KiB and more, so a container
// with bytes on disk has its header whole.
bool SomeOutputIn(const std::string& out_dir) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(out_dir, ec)) {
    if (IsCapturedStream(e.path().filename().string())) continue;
    if (e.is_regular_file(ec) && e.file_size(ec) > 0) return true;
  }
  return false;
}

// Starts conveyorctl with `args` in a fresh directory, sends it the first third of the
// long input, and waits until some of the output is on disk.
struct Cut {
  std::string dir;
  std::unique_ptr<Conveyorctl> ctl;
};
Cut StartAndWaitForOutput(const DaemonProcess& daemon, std::vector<std::string> args,
                          const std::string& output_dir_name = "") {
  Cut cut;
  cut.dir = MakeTempDir();
  args.insert(args.begin(), {"--target", daemon.target(), "transcode", "-", "--no-progress-bar"});
  for (std::string& a : args) {
    if (a.rfind("@/", 0) == 0) a = cut.dir + a.substr(1);  // "@/NAME": NAME in the test's directory
  }
  cut.ctl = std::make_unique<Conveyorctl>(cut.dir, args);
  EXPECT_TRUE(cut.ctl->started());
  const std::string input = ReadText(LongInput());
  EXPECT_TRUE(cut.ctl->Feed(input.substr(0, input.size() / 3)));
  const std::string watched = output_dir_name.empty() ? cut.dir : cut.dir + "/" + output_dir_name;
  EXPECT_TRUE(WaitFor([&] { return SomeOutputIn(watched); })) << cut.ctl->Err();
  return cut;
}

class ConveyorctlOutputTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(LongInput().empty()) << "ffmpeg could not make the input"; }
};

TEST_F(ConveyorctlOutputTest, ASignalRemovesTheContainerAndItsTemporaryFile) {
  DaemonProcess daemon;
  ASSERT_TRUE(daemon.ready());
  for (const int sig : {SIGINT, SIGTERM}) {
    Cut cut = StartAndWaitForOutput(daemon, {"-o", "@/out.mkv", "--container", "mkv"});
    ASSERT_EQ(kill(cut.ctl->pid(), sig), 0);
    const int status = cut.ctl->Wait(60);
    // Ends by the same signal, as a shell expects of an interrupted command.
    EXPECT_TRUE(status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == sig)
        << "wait status " << status << "\n" << cut.ctl->Err();
    EXPECT_NE(cut.ctl->Err().find("CANCELLED: interrupted by SIG"), std::string::npos) << cut.ctl->Err();
    EXPECT_EQ(Entries(cut.dir), std::vector<std::string>{}) << strsignal(sig);
    std::filesystem::remove_all(cut.dir);
  }
  EXPECT_EQ(daemon.Stop(), 0);
}

TEST_F(ConveyorctlOutputTest, ASignalRemovesTheFramesAndTheDirectoryItMade) {
  DaemonProcess daemon;
  ASSERT_TRUE(daemon.ready());
  Cut cut = StartAndWaitForOutput(daemon, {"-o", "@/frames", "--size", "160x0"}, "frames");
  ASSERT_EQ(kill(cut.ctl->pid(), SIGTERM), 0);
  const int status = cut.ctl->Wait(60);
  EXPECT_TRUE(status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM)
      << "wait status " << status << "\n" << cut.ctl->Err();
  EXPECT_EQ(Entries(cut.dir), std::vector<std::string>{});
  std::filesystem::remove_all(cut.dir);
  EXPECT_EQ(daemon.Stop(), 0);
}

TEST_F(ConveyorctlOutputTest, KeepPartialLeavesTheCutContainerAtTheRequestedPath) {
  DaemonProcess daemon;
  ASSERT_TRUE(daemon.ready());
  Cut cut = StartAndWaitForOutput(daemon, {"-o", "@/out.mkv", "--container", "mkv", "--keep-partial"});
  ASSERT_EQ(kill(cut.ctl->pid(), SIGINT), 0);
  const int status = cut.ctl->Wait(60);
  EXPECT_TRUE(status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGINT)
      << "wait status " << status << "\n" << cut.ctl->Err();
  EXPECT_EQ(Entries(cut.dir), std::vector<std::string>{"out.mkv"});
  // What a cut-off MKV holds: some of the frames, readable.
  ASSERT_EQ(Shell("ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames "
                  "-of csv=p=0 " + cut.dir + "/out.mkv > " + cut.dir + "/frames.txt 2>/dev/null"),
            0);
  const int frames = std::atoi(ReadText(cut.dir + "/frames.txt").c_str());
  EXPECT_GT(frames, 0);
  EXPECT_LT(frames, 600);
  std::filesystem::remove_all(cut.dir);
  EXPECT_EQ(daemon.Stop(), 0);
}

TEST_F(ConveyorctlOutputTest, ADaemonKilledMidStreamLeavesNothing) {
  DaemonProcess daemon;
  ASSERT_TRUE(daemon.ready());
  Cut cut = StartAndWaitForOutput(daemon, {"-o", "@/out.mkv", "--container", "mkv"});
  ASSERT_EQ(kill(daemon.pid(), SIGKILL), 0);
  const int status = cut.ctl->Wait(60);
  EXPECT_TRUE(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 1)
      << "wait status " << status << "\n" << cut.ctl->Err();
  EXPECT_EQ(Entries(cut.dir), std::vector<std::string>{});
  std::filesystem::remove_all(cut.dir);
  daemon.Stop(1);  // reaps it
}

TEST_F(ConveyorctlOutputTest, ADrainTimeoutLeavesNothing) {
  DaemonProcess daemon({"--drain-timeout", "1"});
  ASSERT_TRUE(daemon.ready());
  Cut cut = StartAndWaitForOutput(daemon, {"-o", "@/out.mkv", "--container", "mkv"});
  EXPECT_EQ(daemon.Stop(), 0);
  const int status = cut.ctl->Wait(60);
  EXPECT_TRUE(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 1)
      << "wait status " << status << "\n" << cut.ctl->Err();
  EXPECT_NE(cut.ctl->Err().find("drain timeout"), std::string::npos) << cut.ctl->Err();
  EXPECT_EQ(Entries(cut.dir), std::vector<std::string>{});
  std::filesystem::remove_all(cut.dir);
}

// A selection that ends before the input does: the daemon ends the call OK once it has
// the frames, and conveyorctl exits 0 with them while its stdin is still open (it stops
// reading; the rest of the input is never sent). The bytes fed fit a pipe's buffer, so
// the test never waits on a reader that has gone.
TEST_F(ConveyorctlOutputTest, ASelectionEndsTheCallWhileTheInputIsStillOpen) {
  DaemonProcess daemon;
  ASSERT_TRUE(daemon.ready());
  const std::string input = ReadText(LongInput());
  ASSERT_GT(input.size(), 60000u);
  const std::pair<std::vector<std::string>, size_t> selections[] = {
      {{"--frames", "5"}, 5}, {{"--ss", "0.2", "--to", "0.4"}, 5}, {{"--ss", "0.2", "-t", "0.2"}, 5}};
  for (const auto& [selection, frames] : selections) {
    const std::string dir = MakeTempDir();
    std::vector<std::string> args = {"--target", daemon.target(), "transcode", "-", "--no-progress-bar", "-o",
                                     dir + "/frames"};
    args.insert(args.end(), selection.begin(), selection.end());
    Conveyorctl ctl(dir, args);
    ASSERT_TRUE(ctl.started());
    ASSERT_TRUE(ctl.Feed(input.substr(0, 60000)));
    const int status = ctl.Wait(60);
    EXPECT_TRUE(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << selection[1] << ": wait status " << status << "\n" << ctl.Err();
    EXPECT_EQ(Entries(dir + "/frames").size(), frames) << selection[1] << "\n" << ctl.Err();
    ctl.Close();
    std::filesystem::remove_all(dir);
  }
  EXPECT_EQ(daemon.Stop(), 0);
}

// The reader of stdout goes away (`-o - | head`): conveyorctl reports the broken pipe and
// exits 1, as the ffmpeg CLI reports one, instead of dying of SIGPIPE without a word; the
// daemon sees the call cancelled and serves on.
TEST_F(ConveyorctlOutputTest, AReaderOfStdoutThatGoesAwayIsAReportedFailure) {
  DaemonProcess daemon;
  ASSERT_TRUE(daemon.ready());
  const std::string dir = MakeTempDir();
  const std::string command = "set -o pipefail; " + std::string(CONVEYORCTL_PATH) + " --target " + daemon.target() +
                              " transcode " + LongInput() + " -o - --container mkv --no-progress-bar 2>" + dir +
                              "/err | head -c 1000 > /dev/null";
  const int status = Shell("bash -c '" + command + "'");
  EXPECT_EQ(status, 1) << ReadText(dir + "/err");
  EXPECT_NE(ReadText(dir + "/err").find("conveyorctl: FAILED_PRECONDITION: cannot write to stdout: Broken pipe"),
            std::string::npos)
      << ReadText(dir + "/err");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(daemon.Stop(), 0);
}

}  // namespace
}  // namespace conveyor::e2e

#endif  // CONVEYORCTL_PATH
