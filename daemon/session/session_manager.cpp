// Session bookkeeping and the idle reaper (see session_manager.h).
#include "session_manager.h"

#include <random>

#include <spdlog/spdlog.h>

namespace conveyor {
namespace {

std::string NewSessionId() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  static const char* hex = "0123456789abcdef";
  uint64_t v = rng();
  std::string id(16, '0');
  for (int i = 0; i < 16; ++i, v >>= 4) id[i] = hex[v & 15];
  return id;
}

}  // namespace

SessionManager::SessionManager(Scheduler* scheduler, SessionOptions options, SessionLimits limits)
    : scheduler_(scheduler), options_(options), limits_(limits) {
  reaper_ = std::thread([this] { ReapLoop(); });
}

SessionManager::~SessionManager() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  reaper_.join();
}

StatusOr<std::shared_ptr<Session>> SessionManager::Create(const v1::JobSpec& spec) {
  ASSIGN_OR_RETURN(Job job, ParseJobSpec(spec, options_.limits));
  std::lock_guard<std::mutex> lock(mu_);
  if (draining_) return Unavailable("the server is draining; retry on another instance");
  if (static_cast<int>(sessions_.size()) >= limits_.max_sessions) {
    return ResourceExhausted("session limit reached (" + std::to_string(limits_.max_sessions) + " active)");
  }
  std::shared_ptr<Lane> lane = scheduler_->Attach(options_.queue_frames);
  const WorkerSlot& w = scheduler_->worker(lane->worker_index());
  std::string id = NewSessionId();
  auto session = std::make_shared<Session>(id, std::move(job), options_, std::move(lane), w.worker->Describe(),
                                           w.backend);
  sessions_.emplace(id, session);
  spdlog::info("session {}: started on {}{}{}", id, w.worker->Describe(), session->label().empty() ? "" : ", label ",
               session->label());
  return session;
}

void SessionManager::Remove(const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    sessions_.erase(id);
  }
  spdlog::debug("session {}: stream closed", id);
  changed_.notify_all();
}

std::vector<std::shared_ptr<Session>> SessionManager::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<Session>> out;
  for (const auto& [id, s] : sessions_) out.push_back(s);
  return out;
}

Status SessionManager::Cancel(const std::string& id) {
  std::shared_ptr<Session> s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return NotFound("no session " + id);
    s = it->second;
  }
  s->Cancel(Status(StatusCode::kCancelled, "cancelled by CancelSession"));
  return OkStatus();
}

void SessionManager::StartDrain() {
  std::lock_guard<std::mutex> lock(mu_);
  draining_ = true;
}

bool SessionManager::draining() const {
  std::lock_guard<std::mutex> lock(mu_);
  return draining_;
}

int SessionManager::active() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(sessions_.size());
}

bool SessionManager::WaitUntilIdle(double timeout_s) {
  std::unique_lock<std::mutex> lock(mu_);
  return changed_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return sessions_.empty(); });
}

void SessionManager::ReapLoop() {
  const auto period = std::chrono::duration<double>(std::max(0.05, std::min(1.0, limits_.idle_timeout_s / 4)));
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    changed_.wait_for(lock, period, [&] { return stopping_; });
    std::vector<std::shared_ptr<Session>> idle;
    for (const auto& [id, s] : sessions_) {
      if (s->IdleSeconds() > limits_.idle_timeout_s) idle.push_back(s);
    }
    lock.unlock();
    for (auto& s : idle) {
      if (s->finished()) {
        // Ended, but its client stopped reading the last responses: let the stream go.
        spdlog::info("session {}: client not reading after the end; aborting the stream", s->id());
        s->AbortStream();
        continue;
      }
      s->Cancel(Status(StatusCode::kDeadlineExceeded,
                       "session idle for more than " + std::to_string(limits_.idle_timeout_s) +
                           " s (no input read and no output written)"));
    }
    lock.lock();
  }
}

}  // namespace conveyor
