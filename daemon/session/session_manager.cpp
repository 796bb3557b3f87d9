// Session bookkeeping and the idle reaper (see session_manager.h).
#include "session_manager.h"

#include <chrono>
#include <random>

#include <spdlog/spdlog.h>

#include "allocator_tuning.h"

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
    : scheduler_(scheduler),
      decode_devices_(scheduler),
      options_(options),
      pinned_input_(std::make_shared<AssemblyRingPool>(options.pinned_input_bytes)),
      limits_(limits),
      memory_(std::make_shared<MemoryBudget>(limits.memory_budget_bytes)) {
  // spdlog builds its registry on first use; built here, before the reaper starts, it is
  // never first built by the reaper and another thread at once (TSan saw that race).
  (void)spdlog::default_logger_raw();
  // The decode balancer reads the NVIDIA GPUs' engine load through NVML (by PCI bus id).
  std::vector<std::string> pci_bus_ids;
  for (int i = 0; i < scheduler->num_workers(); ++i) {
    const WorkerSlot& w = scheduler->worker(i);
    const std::optional<DecodeTarget> target = w.info.is_gpu() ? w.worker->Decoding() : std::nullopt;
    pci_bus_ids.push_back(target && target->api == "cuda" ? target->pci_bus_id : "");
  }
  DecodeBalancer::Policy policy;
  policy.engine_busy = options_.engines_full_percent / 100.0;
  decode_balancer_ = std::make_shared<DecodeBalancer>(scheduler->num_workers(),
                                                      DecodeBalancer::SystemSampler(pci_bus_ids), policy);
  // The video engines open now rather than at the first session that decodes: the log
  // says at start whether they work, and the engine count is there for the metrics.
  if (options_.decode != media::DecodeMode::kCpu) {
    for (int i = 0; i < scheduler->num_workers(); ++i) {
      if (!scheduler->worker(i).info.is_gpu()) continue;
      decode_devices_.For(i, options_.vaapi_device);
      decode_balancer_->SetEngines(i, decode_devices_.Engines(i));
    }
  }
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

StatusOr<std::shared_ptr<Session>> SessionManager::Create(const v1::JobSpec& spec, std::string owner,
                                                          bool unix_peer) {
  StatusOr<std::shared_ptr<Session>> session = Admit(spec, std::move(owner), unix_peer);
  if (session.ok()) NotifyReadiness();
  return session;
}

void SessionManager::SetReadinessListener(std::function<void(bool ready)> listener) {
  std::lock_guard<std::mutex> lock(listener_mu_);
  readiness_listener_ = std::move(listener);
}

void SessionManager::NotifyReadiness() {
  std::lock_guard<std::mutex> lock(listener_mu_);
  if (readiness_listener_) readiness_listener_(Ready().ok());
}

StatusOr<std::shared_ptr<Session>> SessionManager::Admit(const v1::JobSpec& spec, std::string owner,
                                                         bool unix_peer) {
  SessionOptions options;  // one snapshot, so a reload cannot split a session's options
  std::string shared_memory_socket;
  {
    std::lock_guard<std::mutex> lock(mu_);
    options = options_;
    options.metrics = metrics_;
    shared_memory_socket = shared_memory_socket_;
  }
  metrics::DaemonMetrics* counted = options.metrics != nullptr ? options.metrics->daemon : nullptr;
  auto reject = [counted](metrics::SessionRejection reason, Status status) {
    if (counted != nullptr) counted->SessionsRejected(reason).Inc();
    return status;
  };
  StatusOr<Job> parsed = ParseJobSpec(spec, options.limits);
  if (!parsed.ok()) return reject(metrics::SessionRejection::kInvalidSpec, parsed.status());
  Job job = std::move(parsed).value();
  std::string attach_key;
  if (job.shared_memory_slots > 0 || job.output_shared_slots > 0) {
    const bool input = job.shared_memory_slots > 0;
    const std::string field =
        input ? "spec.raw.shared_memory_slots" : "spec.output.frames.shared_memory_slots";
    if (!unix_peer) {
      return reject(metrics::SessionRejection::kInvalidSpec,
                    FailedPrecondition(field + ": shared memory needs a client on this host, connected over the "
                                               "daemon's unix socket"));
    }
    if (shared_memory_socket.empty()) {
      return reject(metrics::SessionRejection::kInvalidSpec,
                    FailedPrecondition(field + ": this daemon has no shared memory (server.shared_memory is false, "
                                               "or it has no unix socket); " +
                                       (input ? "send frames as frame_chunk messages"
                                              : "leave it 0 for JPEGs in OutputPacket.data")));
    }
    ASSIGN_OR_RETURN(attach_key, NewAttachKey());
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (draining_) {
    return reject(metrics::SessionRejection::kDraining,
                  Unavailable("the server is draining; retry on another instance"));
  }
  if (static_cast<int>(sessions_.size()) >= limits_.max_sessions) {
    return reject(metrics::SessionRejection::kSessionCap,
                  ResourceExhausted("session limit reached (" + std::to_string(limits_.max_sessions) + " active)"));
  }
  std::string id = NewSessionId();
  if (Status fits = memory_->Reserve(id, EstimateAtAdmission(job, options)); !fits.ok()) {
    return reject(metrics::SessionRejection::kMemoryBudget, fits);
  }
  if (counted != nullptr) counted->SessionsStarted().Inc();
  // Container input that may decode on the video engines opens the worker's device.
  const bool session_job_decodes =
      job.container_input && job.decode.value_or(options.decode) != media::DecodeMode::kCpu;
  std::shared_ptr<Lane> lane = scheduler_->Attach(options.queue_frames);
  const int lane_index = lane->worker_index();
  const WorkerSlot& w = scheduler_->worker(lane->worker_index());
  // A GPU worker uploads frames assembled in registered memory without copying them
  // first; the CPU worker reads any memory in place, so it gains nothing from it.
  if (w.info.is_gpu() && !job.container_input && job.shared_memory_slots == 0) options.pinned_input = pinned_input_;
  const bool container_input = job.container_input;
  auto session = std::make_shared<Session>(id, std::move(owner), std::move(job), options, std::move(lane),
                                           w.worker->Describe(), w.info);
  if (!attach_key.empty()) session->EnableSharedMemory(shared_memory_socket, std::move(attach_key));
  if (container_input) {
    // A refusal once the size is probed counts as one by the budget too (after the start).
    session->SetMemoryCheck([memory = memory_, id, counted](const SessionMemoryEstimate& e) {
      Status fits = memory->Resize(id, e);
      if (!fits.ok() && counted != nullptr) counted->SessionsRejected(metrics::SessionRejection::kMemoryBudget).Inc();
      return fits;
    });
  }
  if (session_job_decodes) {
    DecodeDevices::Device d = decode_devices_.For(lane_index, options.vaapi_device);
    session->SetDecodeDevice(std::move(d.device), std::move(d.why_none), decode_balancer_, lane_index);
  }
  sessions_.emplace(id, session);
  ++created_;
  spdlog::info("session {}: started on {}{}{}", id, w.worker->Describe(), session->label().empty() ? "" : ", label ",
               session->label());
  return session;
}

void SessionManager::CountEnd(StatusCode code, std::optional<double> session_seconds) const {
  // No mu_: the reactor calls this under its own lock, and metrics_ is set before serving.
  metrics::DaemonMetrics* counted = metrics_ != nullptr ? metrics_->daemon : nullptr;
  if (counted == nullptr) return;
  counted->SessionsEnded(code).Inc();
  if (session_seconds) counted->SessionDuration().Observe(*session_seconds);
}

void SessionManager::Remove(const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    sessions_.erase(id);
  }
  memory_->Release(id);
  spdlog::debug("session {}: stream closed", id);
  changed_.notify_all();
  NotifyReadiness();
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

int SessionManager::max_sessions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return limits_.max_sessions;
}

void SessionManager::SetLimits(SessionLimits limits) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    limits_ = limits;  // the reaper takes its new period after its current wait (at most 1 s)
    memory_->SetBudget(limits.memory_budget_bytes);
  }
  NotifyReadiness();
}

SessionLimits SessionManager::limits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return limits_;
}

void SessionManager::SetOptions(SessionOptions options) {
  std::lock_guard<std::mutex> lock(mu_);
  options_ = std::move(options);
}

void SessionManager::StartDrain() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    draining_ = true;
  }
  NotifyReadiness();
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
  // The daemon keeps freed frame buffers on its heap while it works (allocator_tuning.h);
  // once it has had no session for kIdleHeapReleaseS, they go back to the OS, once per
  // idle spell. A burst after that faults its pages in again: a few milliseconds.
  constexpr double kIdleHeapReleaseS = 2;
  using Clock = std::chrono::steady_clock;
  Clock::time_point idle_since = Clock::now();
  bool heap_released = false;
  std::unique_lock<std::mutex> lock(mu_);
  uint64_t created_seen = created_;
  while (!stopping_) {
    const auto period = std::chrono::duration<double>(std::max(0.05, std::min(1.0, limits_.idle_timeout_s / 4)));
    changed_.wait_for(lock, period, [&] { return stopping_; });
    const double idle_timeout_s = limits_.idle_timeout_s;
    std::vector<std::shared_ptr<Session>> idle;
    for (const auto& [id, s] : sessions_) {
      if (s->IdleSeconds() > idle_timeout_s) idle.push_back(s);
    }
    const bool no_session = sessions_.empty() && created_ == created_seen;  // none now, none came and went
    created_seen = created_;
    metrics::DaemonMetrics* counted = metrics_ != nullptr ? metrics_->daemon : nullptr;
    lock.unlock();
    if (!no_session || SchedulerBusy()) {
      idle_since = Clock::now();
      heap_released = false;
    } else if (!heap_released &&
               std::chrono::duration<double>(Clock::now() - idle_since).count() >= kIdleHeapReleaseS) {
      heap_released = true;
      spdlog::debug("no session for {} s: {}", kIdleHeapReleaseS,
                    ReleaseFreeHeap() ? "free heap pages returned to the OS" : "no free heap pages to return");
      if (counted != nullptr) counted->IdleHeapReleases().Inc();
    }
    const int trimmed = pinned_input_->Trim(AssemblyRingPool::Clock::now() - AssemblyRingPool::kIdleRingKeep);
    if (trimmed > 0) {
      spdlog::debug("{} frame-assembly ring(s) idle for {} s let go", trimmed, AssemblyRingPool::kIdleRingKeep.count());
    }
    for (auto& s : idle) {
      if (s->finished()) {
        // Ended, but its client stopped reading the last responses: let the stream go.
        spdlog::info("session {}: client not reading after the end; aborting the stream", s->id());
        s->AbortStream();
        continue;
      }
      // A client that stopped reading cannot be told why either: its stream is let go now,
      // not one more idle timeout later (the status would wait behind the unwritten output).
      const bool not_reading = s->HasUnsentOutput();
      const std::string unanswered = s->UnansweredRequest();
      s->Cancel(Status(StatusCode::kDeadlineExceeded,
                       "session idle for more than " + std::to_string(idle_timeout_s) + " s (" +
                           (unanswered.empty() ? "no input read and no output written" : unanswered) + ")"));
      if (not_reading) {
        spdlog::info("session {}: idle with output its client does not read; aborting the stream", s->id());
        s->AbortStream();
      }
    }
    lock.lock();
  }
}

void SessionManager::SetSharedMemorySocket(std::string path) {
  std::lock_guard<std::mutex> lock(mu_);
  shared_memory_socket_ = std::move(path);
}

StatusOr<UniqueFd> SessionManager::AttachSharedMemory(const std::string& key, int fd) {
  std::shared_ptr<Session> found;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, s] : sessions_) {
      if (!s->attach_key().empty() && SameAttachKey(s->attach_key(), key)) {
        found = s;
        break;
      }
    }
  }
  if (!found) return NotFound("no session has this attach key");
  return found->AttachSharedMemory(fd);
}

bool SessionManager::SchedulerBusy() const {
  for (int i = 0; i < scheduler_->num_workers(); ++i) {
    const Scheduler::WorkerLoad load = scheduler_->Load(i);
    if (load.lanes > 0 || load.queued > 0) return true;
  }
  return false;
}

void SessionManager::SetMetrics(const SessionMetricsContext* metrics) {
  std::lock_guard<std::mutex> lock(mu_);
  metrics_ = metrics;
}

Status SessionManager::Ready() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (draining_) return Unavailable("draining");
  if (static_cast<int>(sessions_.size()) >= limits_.max_sessions) {
    return Unavailable("at the session cap (" + std::to_string(limits_.max_sessions) + ")");
  }
  return OkStatus();
}

}  // namespace conveyor
