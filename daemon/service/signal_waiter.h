// conveyord's signals, taken synchronously in the main thread: SIGTERM and SIGINT stop
// (drain), SIGHUP reloads the config. The constructor blocks them; it must run in the main
// thread before any other thread starts, so that every thread inherits the mask.
#pragma once

#include <signal.h>

#include <functional>

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

 private:
  sigset_t set_;
};

}  // namespace conveyor
