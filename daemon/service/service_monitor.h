// The thread that keeps systemd informed while conveyord runs: a STATUS= line with the
// sessions and the workers' frames/s every few seconds (with what a drain waits for, and
// a refused reload until one succeeds), and WATCHDOG=1 at half of the watchdog interval,
// sent only while the liveness check says the daemon is healthy.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "session_manager.h"
#include "systemd_notifier.h"

namespace conveyor {

class ServiceMonitor {
 public:
  // True while the daemon is healthy. Called on the monitor's thread before each ping; a
  // false (or a call that never returns) stops the pings, and systemd restarts us.
  using Liveness = std::function<bool()>;

  struct Options {
    std::chrono::milliseconds status_period{2000};  // between STATUS= lines
  };

  // `notifier` and `sessions` must outlive the monitor.
  ServiceMonitor(SystemdNotifier* notifier, SessionManager* sessions, Liveness alive, Options options);
  ServiceMonitor(SystemdNotifier* notifier, SessionManager* sessions, Liveness alive)
      : ServiceMonitor(notifier, sessions, std::move(alive), Options{}) {}
  ~ServiceMonitor();

  // Starts the thread; does nothing when the notifier is off (no NOTIFY_SOCKET). The
  // first watchdog ping goes out at once.
  void Start();
  void Stop();

  // "3 sessions, 812.4 frames/s", "draining, 1 session, 25.0 frames/s; waiting for it to
  // end, 27 s left": frames/s is the workers' frames_done since the previous call over
  // the time since it. After EndDrain(), what ends it instead. A refused reload adds
  // "; reload refused, the running config stays: WHY".
  std::string SampleStatus();

  // The drain's deadline, counted down in the status from now on.
  void StartDrain(std::chrono::steady_clock::time_point deadline);
  // The drain is over; `what` ("draining ended by a second signal: cancelling 2
  // sessions") is the status from now on.
  void EndDrain(const std::string& what);
  // Why the last reload was refused; "" once one succeeds.
  void SetReloadRefusal(const std::string& why);

 private:
  void Loop();
  uint64_t FramesDone();

  SystemdNotifier* const notifier_;
  SessionManager* const sessions_;
  const Liveness alive_;
  const Options options_;

  std::mutex sample_mu_;
  uint64_t last_frames_ = 0;
  std::chrono::steady_clock::time_point last_sample_;
  bool drain_started_ = false;
  std::chrono::steady_clock::time_point drain_deadline_;
  std::string drain_end_;       // "" while running or draining
  std::string reload_refusal_;  // "" when the last reload succeeded

  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace conveyor
