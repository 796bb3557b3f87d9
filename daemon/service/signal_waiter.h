// conveyord's signals, taken synchronously in the main thread: SIGTERM and SIGINT stop
// (drain, and a second one during the drain ends it), SIGHUP reloads the config. The
// constructor blocks them; it must run in the main thread before any other thread starts,
// so that every thread inherits the mask.
#pragma once

#include <signal.h>

#include <functional>
#include <optional>

namespace conveyor {

class SignalWaiter {
 public:
  enum class Action { kStop, kReload };
  struct Received {
    Action action;
    int signal_number;
  };

  SignalWaiter();

  // Waits for the next of those signals. While none comes, calls `tick` about every
  // `tick_s` seconds, so the caller can show that its loop is alive.
  Received Wait(double tick_s, const std::function<void()>& tick);
  // Takes one of those signals if one is pending; never waits.
  std::optional<Received> Poll();

 private:
  sigset_t set_;
};

}  // namespace conveyor
