// The daemon's sessions: creation against the limits (session cap, memory budget,
// draining), lookup for
// ListSessions and CancelSession, and a reaper that ends sessions idle for longer than
// the idle timeout (a client that stopped sending or stopped reading). Limits and session
// options can be replaced while it runs (SIGHUP).
#pragma once

#include <condition_variable>
#include <map>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "decode_devices.h"
#include "memory_budget.h"
#include "scheduler.h"
#include "session.h"

namespace conveyor {

struct SessionLimits {
  int max_sessions = 64;
  double idle_timeout_s = 60;
  // limits.memory_budget_bytes, resolved (its auto is the caller's): the sessions'
  // memory estimates (session_memory.h) together. The default: no budget.
  uint64_t memory_budget_bytes = UINT64_MAX;
};

class SessionManager {
 public:
  SessionManager(Scheduler* scheduler, SessionOptions options, SessionLimits limits);
  ~SessionManager();

  // `owner` is the caller's identity (Caller::owner), kept by the session for List and
  // Cancel. INVALID_ARGUMENT for a bad spec, RESOURCE_EXHAUSTED at the session cap or
  // when the session's memory estimate does not fit in the budget, UNAVAILABLE while
  // draining. Container input is charged at a provisional size here and at its own once
  // the decoder has probed it, when a session that no longer fits ends with
  // RESOURCE_EXHAUSTED before Started (session_memory.h).
  // `unix_peer`: the caller came over a unix socket, so it shares this host and may use
  // shared-memory input (FAILED_PRECONDITION otherwise, or with no attach socket).
  StatusOr<std::shared_ptr<Session>> Create(const v1::JobSpec& spec, std::string owner, bool unix_peer = false);
  void Remove(const std::string& id);
  std::vector<std::shared_ptr<Session>> List() const;
  Status Cancel(const std::string& id);

  void StartDrain();
  bool draining() const;
  // Readiness for /readyz and grpc.health.v1: OK while new sessions are taken (not
  // draining, under the session cap), else UNAVAILABLE saying why.
  Status Ready() const;
  // Called with Ready().ok() after every change that may move it (a session admitted or
  // gone, the drain, new limits), in order, so that grpc.health.v1 turns NOT_SERVING the
  // moment the cap is reached and clients balancing on it stop picking this daemon.
  // Null: none. Never called with the manager's lock held.
  void SetReadinessListener(std::function<void(bool ready)> listener);
  int active() const;
  int max_sessions() const;
  // Reload: the cap and the memory budget apply to the next Create, the idle timeout to
  // every session at the reaper's next pass. Sessions already over a lowered cap or
  // budget keep running.
  void SetLimits(SessionLimits limits);
  SessionLimits limits() const;
  // Reload: sessions created from now on get `options`; running ones keep theirs.
  void SetOptions(SessionOptions options);
  // Where sessions count (metrics): started and rejected sessions here, frames and bytes
  // in each session. Set once before serving; kept across SetOptions.
  void SetMetrics(const SessionMetricsContext* metrics);
  // What SetMetrics set (null: none), for the rpc layer's call counts.
  const SessionMetricsContext* metrics() const { return metrics_; }
  // A Transcode stream ended with `code`: counted by code, and, for an accepted session,
  // its time from acceptance (`session_seconds`; none for a refused one) observed.
  void CountEnd(StatusCode code, std::optional<double> session_seconds) const;
  // The socket clients hand their shared-memory frames to (rpc/frame_attach_server.h);
  // "" (the default): none, and shared-memory input is refused. Set before serving.
  void SetSharedMemorySocket(std::string path);
  // The attach socket's request: `fd` (-1: none came) for the session whose attach key is
  // `key`, which the caller keeps and closes. Returns the session's JPEG slots to hand
  // back, if it has them (Session::AttachSharedMemory). NOT_FOUND for an unknown key.
  StatusOr<UniqueFd> AttachSharedMemory(const std::string& key, int fd);
  // Waits until no session is left or the timeout passes; true when none is left.
  bool WaitUntilIdle(double timeout_s);
  Scheduler& scheduler() { return *scheduler_; }
  const DecodeDevices& decode_devices() const { return decode_devices_; }
  // Registered memory for assembling frames (assembly_ring_pool.h): the rings sessions
  // (or their frames still with a worker) hold, and the idle ones kept for the next.
  AssemblyRingPool& assembly_rings() { return *pinned_input_; }
  // The running sessions' memory charges and the budget they fit in.
  const MemoryBudget& memory() const { return *memory_; }

 private:
  void ReapLoop();
  // Lanes still attached or frames still queued on any worker (a session's lane can
  // outlive its entry here until its last frames are done).
  bool SchedulerBusy() const;

  Scheduler* const scheduler_;
  DecodeDevices decode_devices_;  // the GPU workers' video engines, opened at start (or first need)
  std::shared_ptr<DecodeBalancer> decode_balancer_;  // auto sessions between engines and CPU
  StatusOr<std::shared_ptr<Session>> Admit(const v1::JobSpec& spec, std::string owner, bool unix_peer);
  void NotifyReadiness();

  std::mutex listener_mu_;  // taken before mu_: keeps the listener's calls in order
  std::function<void(bool)> readiness_listener_;
  mutable std::mutex mu_;
  SessionOptions options_;  // guarded by mu_
  // Registered memory for frames assembled from messages, across sessions; its size
  // comes from the options at construction (a restart changes it).
  std::shared_ptr<AssemblyRingPool> pinned_input_;
  SessionLimits limits_;    // guarded by mu_
  // Shared with the sessions, which charge their probed size to it (container input).
  std::shared_ptr<MemoryBudget> memory_;
  std::condition_variable changed_;
  std::map<std::string, std::shared_ptr<Session>> sessions_;
  bool draining_ = false;
  bool stopping_ = false;
  uint64_t created_ = 0;  // sessions created so far; the reaper tells idle spells apart by it
  std::thread reaper_;
  const SessionMetricsContext* metrics_ = nullptr;
  std::string shared_memory_socket_;  // guarded by mu_
};

}  // namespace conveyor
