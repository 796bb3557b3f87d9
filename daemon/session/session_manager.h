// The daemon's sessions: creation against the limits (session cap, draining), lookup for
// ListSessions and CancelSession, and a reaper that ends sessions idle for longer than
// the idle timeout (a client that stopped sending or stopped reading).
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "scheduler.h"
#include "session.h"

namespace conveyor {

struct SessionLimits {
  int max_sessions = 64;
  double idle_timeout_s = 60;
};

class SessionManager {
 public:
  SessionManager(Scheduler* scheduler, SessionOptions options, SessionLimits limits);
  ~SessionManager();

  // INVALID_ARGUMENT for a bad spec, RESOURCE_EXHAUSTED at the session cap, UNAVAILABLE
  // while draining.
  StatusOr<std::shared_ptr<Session>> Create(const v1::JobSpec& spec);
  void Remove(const std::string& id);
  std::vector<std::shared_ptr<Session>> List() const;
  Status Cancel(const std::string& id);

  void StartDrain();
  bool draining() const;
  int active() const;
  int max_sessions() const { return limits_.max_sessions; }
  // Waits until no session is left or the timeout passes; true when none is left.
  bool WaitUntilIdle(double timeout_s);
  Scheduler& scheduler() { return *scheduler_; }

 private:
  void ReapLoop();

  Scheduler* const scheduler_;
  const SessionOptions options_;
  const SessionLimits limits_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, std::shared_ptr<Session>> sessions_;
  bool draining_ = false;
  bool stopping_ = false;
  std::thread reaper_;
};

}  // namespace conveyor
