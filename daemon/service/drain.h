// conveyord's drain after SIGTERM or SIGINT: running sessions get up to drain_timeout_s to
// finish while systemd hears what is waited for and has its stop timeout extended past
// the drain's end; a second SIGTERM or SIGINT, or the timeout, cancels the sessions left.
#pragma once

#include <chrono>

#include "heartbeat.h"
#include "service_monitor.h"
#include "session_manager.h"
#include "signal_waiter.h"
#include "systemd_notifier.h"

namespace conveyor {

struct DrainOptions {
  double timeout_s = 30;  // workers.drain_timeout_s when the drain starts
  // How often the loop looks for a second signal and beats the main loop's heartbeat.
  double poll_s = 0.1;
  // Between EXTEND_TIMEOUT_USEC= messages: well inside each extension, so one lost
  // datagram costs nothing.
  double notify_period_s = 2;
  // What each extension reaches past the drain's deadline: cancelling the sessions left,
  // the gRPC shutdown (2 s) and the workers' teardown.
  double extend_margin_s = 15;
};

enum class DrainEnd {
  kIdle,          // every session ended
  kTimeout,       // sessions left at the timeout were cancelled
  kSecondSignal,  // a second SIGTERM or SIGINT cancelled the sessions left
};

// Runs the drain; the caller has already refused new streams (SessionManager::StartDrain).
// Sends STOPPING=1 at once, then every notify_period_s a STATUS= line and
// EXTEND_TIMEOUT_USEC= of the time left plus extend_margin_s; systemd's TimeoutStopSec
// bounds only a daemon that says nothing. Sessions cancelled at the end get UNAVAILABLE.
// SIGHUP during the drain is taken and ignored.
DrainEnd Drain(const DrainOptions& options, SessionManager* sessions, SignalWaiter* signals,
               SystemdNotifier* notifier, ServiceMonitor* monitor, Heartbeats* main_loop);

}  // namespace conveyor
