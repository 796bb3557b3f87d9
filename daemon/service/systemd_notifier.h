// conveyord's messages to systemd (sd_notify(3)): READY=1, STATUS=, WATCHDOG=1,
// RELOADING=1, STOPPING=1 and EXTEND_TIMEOUT_USEC=. Without NOTIFY_SOCKET (not started by
// systemd as Type=notify) every call is a no-op that succeeds.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "status.h"

namespace conveyor {

// CLOCK_MONOTONIC in microseconds, the clock of MONOTONIC_USEC=; the same in every process.
uint64_t MonotonicMicroseconds();

class SystemdNotifier {
 public:
  // Reads NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID once; the environment is left as
  // it is (unsetting variables is not thread-safe and nothing we start reads them).
  SystemdNotifier();

  bool enabled() const { return enabled_; }
  // WATCHDOG_USEC when systemd watches this process (WATCHDOG_PID unset or ours), else 0.
  // Pings are due at half of it.
  std::chrono::microseconds watchdog_interval() const { return watchdog_interval_; }

  // READY=1, with a first STATUS= line when `status` is not empty.
  Status Ready(const std::string& status = "");
  // RELOADING=1 with MONOTONIC_USEC=`monotonic_usec`, when the reload began (systemd 253+
  // wants it); Ready() ends the reload.
  Status Reloading(uint64_t monotonic_usec);
  // STOPPING=1, with a STATUS= line when `status` is not empty and EXTEND_TIMEOUT_USEC=
  // when `extend` is above zero (see ExtendTimeout).
  Status Stopping(const std::string& status = "", std::chrono::microseconds extend = {});
  // EXTEND_TIMEOUT_USEC=: systemd's timeout for the state the unit is in (starting,
  // running, stopping) now ends no sooner than `extend` from now, and it expects the next
  // message within that; systemd 236+. With a STATUS= line when `status` is not empty.
  Status ExtendTimeout(std::chrono::microseconds extend, const std::string& status = "");
  Status SetStatus(const std::string& status);
  Status Watchdog();

 private:
  // Sends `state` (newline-separated VARIABLE=value lines).
  Status Send(const std::string& state);

  bool enabled_ = false;
  std::chrono::microseconds watchdog_interval_{0};
};

}  // namespace conveyor
