// The signal watch of conveyorctl transcode (see interrupt.h). The handler only records
// the signal and writes a byte to a pipe; the watch's thread does the rest, outside
// signal context.
#include "interrupt.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace conveyor::ctl {
namespace {

constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};

// Lock-free atomics, so the handler may touch them.
std::atomic<int> g_signal{0};
std::atomic<int> g_wake_fd{-1};

void OnSignal(int sig) {
  int none = 0;
  if (!g_signal.compare_exchange_strong(none, sig)) {
    // Asked again while the first is handled: the default action, now (delivered when
    // this handler returns, as the signal is blocked inside it).
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  const int saved = errno;
  const int fd = g_wake_fd.load();
  if (fd >= 0) {
    const char c = 1;
    [[maybe_unused]] const ssize_t n = write(fd, &c, 1);
  }
  errno = saved;
}

}  // namespace

std::string SignalName(int signal) {
  switch (signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "signal " + std::to_string(signal);
  }
}

InterruptWatch::InterruptWatch() {
  g_signal = 0;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;  // no watch: the signals keep their default action
  read_ = UniqueFd(fds[0]);
  write_ = UniqueFd(fds[1]);
  (void)fcntl(write_.get(), F_SETFL, O_NONBLOCK);
  g_wake_fd = write_.get();
  thread_ = std::thread([this] { Loop(); });
  for (int i = 0; i < 3; ++i) {
    struct sigaction current {};
    if (sigaction(kSignals[i], nullptr, &current) != 0 || current.sa_handler == SIG_IGN) continue;
    struct sigaction action {};
    action.sa_handler = OnSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // stdio writes of the output carry on
    installed_[i] = sigaction(kSignals[i], &action, &previous_[i]) == 0;
  }
}

InterruptWatch::~InterruptWatch() {
  for (int i = 0; i < 3; ++i) {
    if (installed_[i]) sigaction(kSignals[i], &previous_[i], nullptr);
  }
  if (!thread_.joinable()) return;
  g_wake_fd = -1;
  stopping_ = true;
  const char c = 0;
  [[maybe_unused]] const ssize_t n = write(write_.get(), &c, 1);
  thread_.join();
}

void InterruptWatch::SetCancel(std::function<void()> cancel) {
  std::lock_guard<std::mutex> lock(mu_);
  cancel_ = std::move(cancel);
  if (fired_ && cancel_) cancel_();
}

void InterruptWatch::ClearCancel() {
  std::lock_guard<std::mutex> lock(mu_);
  cancel_ = nullptr;
}

int InterruptWatch::signal() const { return g_signal.load(); }

void InterruptWatch::Loop() {
  for (;;) {
    char c = 0;
    const ssize_t n = read(read_.get(), &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || stopping_) return;
    std::lock_guard<std::mutex> lock(mu_);
    fired_ = true;
    if (cancel_) cancel_();
  }
}

}  // namespace conveyor::ctl
