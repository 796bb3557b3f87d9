// conveyorctl's answer to SIGINT, SIGTERM and SIGHUP during a transcode: the call is
// cancelled so that the output writers remove what they wrote (or, with --keep-partial,
// leave it under its final names) before conveyorctl ends, instead of dying with hidden
// temporary files behind it. main() then dies of the same signal, as a shell expects.
#pragma once

#include <atomic>
#include <csignal>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "unique_fd.h"

namespace conveyor::ctl {

// One at a time per process: the handlers are process-wide. A signal that was ignored
// when the watch began (a background job of a non-interactive shell, nohup) stays
// ignored. A second signal while the first is handled ends the process at once.
class InterruptWatch {
 public:
  // Installs the handlers and starts the thread that runs the cancel callback.
  InterruptWatch();
  // Stops the thread and puts the previous handlers back.
  ~InterruptWatch();
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;

  // Runs `cancel` on the watch's thread at the first signal, or now when one came
  // already. The callback is dropped by ClearCancel(), which waits for a running one,
  // so it may refer to objects that ClearCancel() outlives.
  void SetCancel(std::function<void()> cancel);
  void ClearCancel();

  // The first signal that came, 0 while none has.
  int signal() const;

 private:
  void Loop();

  UniqueFd read_, write_;
  std::mutex mu_;
  std::function<void()> cancel_;
  bool fired_ = false;
  std::atomic<bool> stopping_{false};
  struct sigaction previous_[3] = {};
  bool installed_[3] = {};
  std::thread thread_;
};

// Scopes a cancel callback: set on construction, cleared when it goes. A null watch
// does nothing.
class ScopedCancel {
 public:
  ScopedCancel(InterruptWatch* watch, std::function<void()> cancel) : watch_(watch) {
    if (watch_ != nullptr) watch_->SetCancel(std::move(cancel));
  }
  ~ScopedCancel() {
    if (watch_ != nullptr) watch_->ClearCancel();
  }
  ScopedCancel(const ScopedCancel&) = delete;
  ScopedCancel& operator=(const ScopedCancel&) = delete;

 private:
  InterruptWatch* watch_;
};

// "SIGINT", "SIGTERM", "SIGHUP"; "signal N" for others.
std::string SignalName(int signal);

}  // namespace conveyor::ctl
