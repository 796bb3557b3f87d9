// Places sessions on workers and shares each worker fairly between its sessions. Each
// session gets a Lane on the least-loaded worker (GPUs before the CPU); one dispatcher
// thread per worker takes frames from its lanes in round-robin order and submits them,
// so a 4K session cannot starve a 360p one: each gets one frame in turn.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "status.h"
#include "worker.h"

namespace conveyor {

struct WorkerSlot {
  std::unique_ptr<Worker> worker;
  WorkerInfo info;  // worker->Info(), read once
};

class Scheduler;

// One session's queue on one worker.
class Lane {
 public:
  Lane(Scheduler* scheduler, int worker_index, int capacity);

  // Queues a frame (its owner keeps its memory while it waits); blocks while the lane
  // holds `capacity` frames. CANCELLED once the lane is cancelled (the frame is dropped
  // and its on_done never runs).
  Status Submit(FrameRequest frame);
  // Drops queued frames (their on_done never runs) and refuses new ones; returns how
  // many it dropped. Frames the worker already has still complete and call on_done.
  int Cancel();
  int queued() const;
  int worker_index() const { return worker_index_; }
  Worker& worker() const;

 private:
  friend class Scheduler;
  Scheduler* const scheduler_;
  const int worker_index_;
  const int capacity_;
  mutable std::mutex mu_;
  std::condition_variable space_;
  std::deque<FrameRequest> frames_;
  bool cancelled_ = false;
};

class Scheduler {
 public:
  explicit Scheduler(std::vector<std::unique_ptr<Worker>> workers);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // A lane on the worker with the fewest lanes, GPUs before the CPU. Dropping the last
  // reference detaches it (after Cancel or once it is empty).
  std::shared_ptr<Lane> Attach(int capacity);

  struct WorkerLoad {
    int lanes = 0;
    int queued = 0;  // frames waiting in lanes for this worker
  };
  int num_workers() const { return static_cast<int>(workers_.size()); }
  const WorkerSlot& worker(int i) const { return workers_[i]; }
  WorkerLoad Load(int i) const;

  // OK when every worker's threads showed they are alive within `max_stale_s` (see
  // heartbeat.h); otherwise UNAVAILABLE naming the worker. For /healthz and the watchdog.
  Status CheckWorkersAlive(double max_stale_s) const;

 private:
  friend class Lane;
  struct PerWorker {
    std::vector<std::weak_ptr<Lane>> lanes;
    size_t next = 0;  // round-robin position
    bool wake = false;
  };
  void Notify(int worker_index);
  void DispatchLoop(int worker_index);
  bool TakeNext(int worker_index, FrameRequest* out);  // with mu_ held

  std::vector<WorkerSlot> workers_;
  mutable std::mutex mu_;
  std::condition_variable work_;
  std::vector<PerWorker> per_worker_;
  bool stopping_ = false;
  std::vector<std::thread> dispatchers_;
};

}  // namespace conveyor
