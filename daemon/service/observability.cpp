// Metrics and probes wired to the engine; see observability.h.
#include "observability.h"

#include <chrono>
#include <cstdint>
#include <limits>

#include "allocator_tuning.h"
#include "input_spool.h"
#include "process_metrics.h"

namespace conveyor {
namespace {

// Registered here rather than in the catalogue: they describe the daemon's config, not
// the engine.
StatusOr<metrics::Gauge*> AddPlainGauge(metrics::Registry& r, const std::string& name, const std::string& help) {
  metrics::MetricSpec spec;
  spec.name = name;
  spec.help = help;
  ASSIGN_OR_RETURN(metrics::GaugeFamily * family, r.AddGauge(std::move(spec)));
  return family->WithLabels({});
}

}  // namespace

std::string Observability::DeviceLabel(const WorkerSlot& w) {
  return w.info.is_gpu() ? "gpu" + std::to_string(w.info.device) : "cpu";
}

StatusOr<std::unique_ptr<Observability>> Observability::Create(Scheduler* scheduler, const std::string& version,
                                                               const std::string& gpu_backend) {
  std::unique_ptr<Observability> o(new Observability(scheduler));
  ASSIGN_OR_RETURN(metrics::DaemonMetrics m, metrics::DaemonMetrics::Create(o->registry_, {version, gpu_backend}));
  o->daemon_ = std::make_unique<metrics::DaemonMetrics>(std::move(m));
  o->context_.daemon = o->daemon_.get();
  ASSIGN_OR_RETURN(o->config_load_ok_,
                   AddPlainGauge(o->registry_, "conveyor_config_last_reload_successful",
                                 "1 when the last config load (the start, or a SIGHUP reload) was applied; 0 when "
                                 "the last reload was refused and the previous config still runs."));
  ASSIGN_OR_RETURN(o->config_load_time_,
                   AddPlainGauge(o->registry_, "conveyor_config_last_reload_timestamp_seconds",
                                 "Unix time of the last config load: the start, or the last SIGHUP reload, "
                                 "applied or refused."));
  ASSIGN_OR_RETURN(o->cpu_fallback_,
                   AddPlainGauge(o->registry_, "conveyor_workers_cpu_fallback",
                                 "1 when workers = \"auto\" on a GPU build found no GPU it could open and "
                                 "encodes on the CPU (the log and /readyz say why); 0 otherwise."));
  for (int i = 0; i < scheduler->num_workers(); ++i) {
    const WorkerSlot& w = scheduler->worker(i);
    const std::string label = DeviceLabel(w);
    ASSIGN_OR_RETURN(metrics::DeviceMetrics d, o->daemon_->ForDevice(label));
    o->context_.devices.push_back(d);
    o->context_.device_labels.push_back(label);
    ASSIGN_OR_RETURN(metrics::ScopedCallback queued,
                     o->daemon_->BindQueueDepth(label, [scheduler, i] {
                       return static_cast<double>(scheduler->Load(i).queued);
                     }));
    o->bindings_.push_back(std::move(queued));
    o->restarts_seen_.push_back(0);
  }
  ASSIGN_OR_RETURN(metrics::ScopedCallback in_use,
                   o->daemon_->BindHeapInUse([] { return HeapUsageNow().in_use_bytes; }));
  o->bindings_.push_back(std::move(in_use));
  ASSIGN_OR_RETURN(metrics::ScopedCallback free, o->daemon_->BindHeapFree([] { return HeapUsageNow().free_bytes; }));
  o->bindings_.push_back(std::move(free));
  ASSIGN_OR_RETURN(metrics::ScopedCallback spool,
                   o->daemon_->BindInputSpool([] { return static_cast<double>(media::InputSpool::TotalBytes()); }));
  o->bindings_.push_back(std::move(spool));
  ASSIGN_OR_RETURN(std::vector<metrics::ScopedCallback> process, metrics::RegisterProcessMetrics(o->registry_));
  for (metrics::ScopedCallback& b : process) o->bindings_.push_back(std::move(b));
  o->updater_ = std::thread([p = o.get()] { p->UpdateLoop(); });
  return o;
}

Observability::~Observability() { Stop(); }

void Observability::NoteConfigLoad(bool ok, double unix_time_s) {
  config_load_ok_->Set(ok ? 1 : 0);
  config_load_time_->Set(unix_time_s);
}

Status Observability::Serve(const std::string& listen, SessionManager* sessions, std::function<Status()> alive) {
  ASSIGN_OR_RETURN(metrics::ScopedCallback active,
                   daemon_->BindSessionsActive([sessions] { return static_cast<double>(sessions->active()); }));
  bindings_.push_back(std::move(active));
  ASSIGN_OR_RETURN(metrics::ScopedCallback ready,
                   daemon_->BindReady([this, sessions] { return Readiness(*sessions).ok() ? 1.0 : 0.0; }));
  bindings_.push_back(std::move(ready));
  ASSIGN_OR_RETURN(metrics::ScopedCallback draining,
                   daemon_->BindDraining([sessions] { return sessions->draining() ? 1.0 : 0.0; }));
  bindings_.push_back(std::move(draining));
  ASSIGN_OR_RETURN(metrics::ScopedCallback cap, daemon_->BindSessionsMax([sessions] {
    return static_cast<double>(sessions->max_sessions());
  }));
  bindings_.push_back(std::move(cap));
  ASSIGN_OR_RETURN(metrics::ScopedCallback estimate, daemon_->BindSessionsMemoryEstimate([sessions] {
    return static_cast<double>(sessions->memory().charged());
  }));
  bindings_.push_back(std::move(estimate));
  ASSIGN_OR_RETURN(metrics::ScopedCallback budget, daemon_->BindSessionsMemoryBudget([sessions] {
    const uint64_t bytes = sessions->memory().budget();
    return bytes == UINT64_MAX ? std::numeric_limits<double>::infinity() : static_cast<double>(bytes);
  }));
  bindings_.push_back(std::move(budget));
  ASSIGN_OR_RETURN(metrics::ScopedCallback pinned_in_use, daemon_->BindPinnedInput("in_use", [sessions] {
    return static_cast<double>(sessions->assembly_rings().in_use_bytes());
  }));
  bindings_.push_back(std::move(pinned_in_use));
  ASSIGN_OR_RETURN(metrics::ScopedCallback pinned_idle, daemon_->BindPinnedInput("idle", [sessions] {
    return static_cast<double>(sessions->assembly_rings().idle_bytes());
  }));
  bindings_.push_back(std::move(pinned_idle));
  for (int i = 0; i < static_cast<int>(context_.device_labels.size()); ++i) {
    if (context_.device_labels[i] == "cpu") continue;
    ASSIGN_OR_RETURN(metrics::ScopedCallback surfaces,
                     daemon_->BindDecoderSurfaces(context_.device_labels[i], [sessions, i] {
                       return static_cast<double>(sessions->decode_devices().HeldSurfaceBytes(i));
                     }));
    bindings_.push_back(std::move(surfaces));
    ASSIGN_OR_RETURN(metrics::ScopedCallback retired,
                     daemon_->BindRetiredDecoders(context_.device_labels[i], [sessions, i] {
                       return static_cast<double>(sessions->decode_devices().RetiredDecoders(i));
                     }));
    bindings_.push_back(std::move(retired));
    const int engines = sessions->decode_devices().Engines(i);
    if (engines > 0) {
      ASSIGN_OR_RETURN(metrics::ScopedCallback counted, daemon_->BindVideoEngines(context_.device_labels[i], [engines] {
        return static_cast<double>(engines);
      }));
      bindings_.push_back(std::move(counted));
    }
  }
  if (listen.empty()) return OkStatus();
  metrics::HttpEndpoint::Hooks hooks;
  hooks.registry = &registry_;
  hooks.alive = std::move(alive);
  hooks.ready = [this, sessions] { return Readiness(*sessions); };
  if (!cpu_fallback_reason_.empty()) {
    hooks.ready_note = "warning: workers = \"auto\" serves on the CPU: " + cpu_fallback_reason_;
  }
  ASSIGN_OR_RETURN(endpoint_, metrics::HttpEndpoint::Start(listen, std::move(hooks)));
  return OkStatus();
}

void Observability::NoteCpuFallback(const std::string& reason) {
  cpu_fallback_->Set(reason.empty() ? 0 : 1);
  cpu_fallback_reason_ = reason;
}

Status Observability::Readiness(const SessionManager& sessions) const {
  if (!accepting_) return Unavailable("starting: gRPC does not serve yet");
  return sessions.Ready();
}

void Observability::Stop() {
  if (endpoint_) endpoint_->Stop();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (updater_.joinable()) updater_.join();
}

// Worker::Stats() is not free (a GPU worker recomputes its overlap ratio), so it is read
// once a second here rather than at each scrape: the gauges are set from it and the
// restart counter advanced by the difference from the worker's running total.
void Observability::UpdateLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    lock.unlock();
    for (int i = 0; i < scheduler_->num_workers(); ++i) {
      const WorkerStats st = scheduler_->worker(i).worker->Stats();
      const metrics::DeviceMetrics& d = context_.devices[i];
      d.stream_overlap_ratio->Set(st.overlap_ratio);
      d.pinned_memory_allocated_bytes->Set(static_cast<double>(st.pinned_bytes));
      d.pinned_memory_in_use_bytes->Set(static_cast<double>(st.pinned_in_use_bytes));
      d.device_memory_used_bytes->Set(static_cast<double>(st.device_bytes));
      if (st.restarts > restarts_seen_[i]) {
        d.worker_restarts->Inc(st.restarts - restarts_seen_[i]);
        restarts_seen_[i] = st.restarts;
      }
    }
    lock.lock();
    wake_.wait_for(lock, std::chrono::seconds(1), [&] { return stopping_; });
  }
}

}  // namespace conveyor
