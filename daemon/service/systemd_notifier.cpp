// sd_notify(3) and sd_watchdog_enabled(3) behind SystemdNotifier (see systemd_notifier.h).
#include "systemd_notifier.h"

#include <systemd/sd-daemon.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace conveyor {
namespace {

std::string StatusLine(const std::string& status) {
  std::string line = "STATUS=" + status;
  for (char& c : line) {
    if (c == '\n') c = ' ';  // one assignment per line
  }
  return line;
}

}  // namespace

uint64_t MonotonicMicroseconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000u + static_cast<uint64_t>(ts.tv_nsec) / 1000u;
}

SystemdNotifier::SystemdNotifier() {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  enabled_ = socket != nullptr && socket[0] != '\0';
  uint64_t usec = 0;
  if (enabled_ && sd_watchdog_enabled(0, &usec) > 0) watchdog_interval_ = std::chrono::microseconds(usec);
}

Status SystemdNotifier::Send(const std::string& state) {
  if (!enabled_) return OkStatus();
  const int r = sd_notify(0, state.c_str());
  if (r < 0) {
    const std::string first = state.substr(0, state.find('\n'));
    return Unavailable("sd_notify(" + first + "): " + std::strerror(-r));
  }
  return OkStatus();
}

Status SystemdNotifier::Ready(const std::string& status) {
  return Send(status.empty() ? "READY=1" : "READY=1\n" + StatusLine(status));
}

Status SystemdNotifier::Reloading(uint64_t monotonic_usec) {
  return Send("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(monotonic_usec));
}

Status SystemdNotifier::Stopping(const std::string& status, std::chrono::microseconds extend) {
  std::string state = "STOPPING=1";
  if (!status.empty()) state += "\n" + StatusLine(status);
  if (extend.count() > 0) state += "\nEXTEND_TIMEOUT_USEC=" + std::to_string(extend.count());
  return Send(state);
}

Status SystemdNotifier::ExtendTimeout(std::chrono::microseconds extend, const std::string& status) {
  std::string state = "EXTEND_TIMEOUT_USEC=" + std::to_string(std::max<int64_t>(extend.count(), 1));
  if (!status.empty()) state += "\n" + StatusLine(status);
  return Send(state);
}

Status SystemdNotifier::SetStatus(const std::string& status) { return Send(StatusLine(status)); }

Status SystemdNotifier::Watchdog() { return Send("WATCHDOG=1"); }

}  // namespace conveyor
