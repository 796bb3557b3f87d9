// Session placement and round-robin dispatch (see scheduler.h).
#include "scheduler.h"

#include <algorithm>
#include <cstdio>

namespace conveyor {

Lane::Lane(Scheduler* scheduler, int worker_index, int capacity)
    : scheduler_(scheduler), worker_index_(worker_index), capacity_(std::max(1, capacity)) {}

Status Lane::Submit(FrameRequest frame) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    space_.wait(lock, [&] { return cancelled_ || static_cast<int>(frames_.size()) < capacity_; });
    if (cancelled_) return Status(StatusCode::kCancelled, "session cancelled");
    frames_.push_back(std::move(frame));
  }
  scheduler_->Notify(worker_index_);
  return OkStatus();
}

int Lane::Cancel() {
  std::deque<FrameRequest> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    dropped.swap(frames_);
  }
  space_.notify_all();
  return static_cast<int>(dropped.size());
}

int Lane::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(frames_.size());
}

Worker& Lane::worker() const { return *scheduler_->workers_[worker_index_].worker; }

Scheduler::Scheduler(std::vector<std::unique_ptr<Worker>> workers) : per_worker_(workers.size()) {
  for (std::unique_ptr<Worker>& w : workers) {
    WorkerInfo info = w->Info();
    workers_.push_back({std::move(w), std::move(info)});
  }
  for (int i = 0; i < num_workers(); ++i) dispatchers_.emplace_back([this, i] { DispatchLoop(i); });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_.notify_all();
  for (std::thread& t : dispatchers_) t.join();
  for (WorkerSlot& w : workers_) w.worker->Flush();
}

std::shared_ptr<Lane> Scheduler::Attach(int capacity) {
  std::lock_guard<std::mutex> lock(mu_);
  int best = -1;
  size_t best_lanes = 0;
  bool best_gpu = false;
  for (int i = 0; i < num_workers(); ++i) {
    PerWorker& pw = per_worker_[i];
    pw.lanes.erase(std::remove_if(pw.lanes.begin(), pw.lanes.end(), [](const auto& l) { return l.expired(); }),
                   pw.lanes.end());
    const bool gpu = workers_[i].info.is_gpu();
    const size_t n = pw.lanes.size();
    if (best < 0 || (gpu && !best_gpu) || (gpu == best_gpu && n < best_lanes)) {
      best = i;
      best_lanes = n;
      best_gpu = gpu;
    }
  }
  auto lane = std::make_shared<Lane>(this, best, capacity);
  per_worker_[best].lanes.push_back(lane);
  return lane;
}

Scheduler::WorkerLoad Scheduler::Load(int i) const {
  std::vector<std::shared_ptr<Lane>> lanes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& weak : per_worker_[i].lanes) {
      if (auto l = weak.lock()) lanes.push_back(std::move(l));
    }
  }
  WorkerLoad load;
  load.lanes = static_cast<int>(lanes.size());
  for (const auto& l : lanes) load.queued += l->queued();
  return load;
}

void Scheduler::Notify(int worker_index) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    per_worker_[worker_index].wake = true;
  }
  work_.notify_all();
}

bool Scheduler::TakeNext(int worker_index, FrameRequest* out) {
  PerWorker& pw = per_worker_[worker_index];
  const size_t n = pw.lanes.size();
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (pw.next + k) % n;
    std::shared_ptr<Lane> lane = pw.lanes[i].lock();
    if (!lane) continue;
    std::lock_guard<std::mutex> lane_lock(lane->mu_);
    if (lane->frames_.empty()) continue;
    *out = std::move(lane->frames_.front());
    lane->frames_.pop_front();
    lane->space_.notify_all();
    pw.next = i + 1;
    return true;
  }
  return false;
}

void Scheduler::DispatchLoop(int worker_index) {
  Worker& worker = *workers_[worker_index].worker;
  for (;;) {
    FrameRequest frame;
    {
      std::unique_lock<std::mutex> lock(mu_);
      for (;;) {
        if (TakeNext(worker_index, &frame)) break;
        if (stopping_) return;
        per_worker_[worker_index].wake = false;
        work_.wait(lock, [&] { return stopping_ || per_worker_[worker_index].wake; });
      }
    }
    // Blocks while every slot of the worker is busy: backpressure into the lanes.
    auto on_done = frame.on_done;
    Status s = worker.Submit(std::move(frame));
    if (!s.ok()) {
      // Refused before reaching the worker (bad input): report it as this frame's result.
      FrameResult r;
      r.status = s;
      if (on_done) on_done(std::move(r));
    }
  }
}

Status Scheduler::CheckWorkersAlive(double max_stale_s) const {
  for (const WorkerSlot& w : workers_) {
    const double stale = w.worker->Stats().stalest_thread_s;
    if (stale > max_stale_s) {
      char seconds[32];
      std::snprintf(seconds, sizeof(seconds), "%.1f", stale);
      return Unavailable(w.worker->Describe() + ": a worker thread has not run for " + seconds + " s");
    }
  }
  return OkStatus();
}

}  // namespace conveyor
