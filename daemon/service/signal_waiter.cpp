// Blocking SIGTERM, SIGINT and SIGHUP and taking them with sigtimedwait (see
// signal_waiter.h). sigtimedwait rather than sigwait so the loop can tick while it waits.
#include "signal_waiter.h"

#include <pthread.h>

#include <cerrno>
#include <cmath>
#include <ctime>

namespace conveyor {

SignalWaiter::SignalWaiter() {
  sigemptyset(&set_);
  sigaddset(&set_, SIGTERM);
  sigaddset(&set_, SIGINT);
  sigaddset(&set_, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set_, nullptr);
}

namespace {

SignalWaiter::Received Classify(int number) {
  return {number == SIGHUP ? SignalWaiter::Action::kReload : SignalWaiter::Action::kStop, number};
}

}  // namespace

SignalWaiter::Received SignalWaiter::Wait(double tick_s, const std::function<void()>& tick) {
  if (!(tick_s > 0 && tick_s < 3600)) tick_s = 1;  // sigtimedwait would refuse it and spin
  timespec timeout{};
  timeout.tv_sec = static_cast<time_t>(tick_s);
  timeout.tv_nsec = static_cast<long>((tick_s - std::floor(tick_s)) * 1e9);
  for (;;) {
    const int number = sigtimedwait(&set_, nullptr, &timeout);
    if (number > 0) return Classify(number);
    // EAGAIN: the tick passed; EINTR: another signal (SIGCONT after a stop) woke us.
    if (tick) tick();
  }
}

std::optional<SignalWaiter::Received> SignalWaiter::Poll() {
  const timespec now{};
  const int number = sigtimedwait(&set_, nullptr, &now);
  if (number > 0) return Classify(number);
  return std::nullopt;
}

}  // namespace conveyor
