// The drain (see drain.h). The main thread runs it: it alone takes signals, so it must
// look for a second one while it waits for the sessions.
#include "drain.h"

#include <algorithm>
#include <string>

#include <spdlog/spdlog.h>

namespace conveyor {
namespace {

using Clock = std::chrono::steady_clock;

std::chrono::microseconds Micros(double seconds) {
  return std::chrono::microseconds(static_cast<int64_t>(std::max(0.0, seconds) * 1e6));
}

// Cancels every session left with UNAVAILABLE "the server is shutting down (`why`)", and
// tells systemd and the log.
void CancelTheRest(const std::string& why, SessionManager* sessions, SystemdNotifier* notifier,
                   ServiceMonitor* monitor) {
  const int left = sessions->active();
  const std::string what = why + ": cancelling " + std::to_string(left) + " session" + (left == 1 ? "" : "s");
  spdlog::warn("{}", what);
  monitor->EndDrain(what);
  if (Status s = notifier->SetStatus(what); !s.ok()) spdlog::warn("{}", s.ToString());
  for (auto& session : sessions->List()) session->Cancel(Unavailable("the server is shutting down (" + why + ")"));
}

}  // namespace

DrainEnd Drain(const DrainOptions& options, SessionManager* sessions, SignalWaiter* signals,
               SystemdNotifier* notifier, ServiceMonitor* monitor, Heartbeats* main_loop) {
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.timeout_s));
  monitor->StartDrain(deadline);
  auto extension = [&](Clock::time_point now) {
    return Micros(std::chrono::duration<double>(deadline - now).count() + options.extend_margin_s);
  };
  if (Status s = notifier->Stopping(monitor->SampleStatus(), extension(start)); !s.ok()) {
    spdlog::warn("{}", s.ToString());
  }
  Clock::time_point next_notify =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.notify_period_s));
  for (;;) {
    const Clock::time_point now = Clock::now();
    const double left = std::chrono::duration<double>(deadline - now).count();
    if (sessions->WaitUntilIdle(std::clamp(left, 0.0, options.poll_s))) return DrainEnd::kIdle;
    main_loop->Beat(0);
    while (std::optional<SignalWaiter::Received> r = signals->Poll()) {
      if (r->action == SignalWaiter::Action::kReload) {
        spdlog::warn("SIGHUP while draining: not reloading");
        continue;
      }
      spdlog::warn("signal {} while draining", r->signal_number);
      CancelTheRest("draining ended by a second signal", sessions, notifier, monitor);
      return DrainEnd::kSecondSignal;
    }
    if (Clock::now() >= deadline) {
      CancelTheRest("drain timeout", sessions, notifier, monitor);
      return DrainEnd::kTimeout;
    }
    if (Clock::now() >= next_notify) {
      // Each extension counts from now; the next one is due long before it lapses.
      if (Status s = notifier->ExtendTimeout(extension(Clock::now()), monitor->SampleStatus()); !s.ok()) {
        spdlog::warn("{}", s.ToString());
      }
      next_notify = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(options.notify_period_s));
    }
  }
}

}  // namespace conveyor
