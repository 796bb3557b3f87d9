// conveyord's metrics and HTTP probes, wired to the engine: the registry and the daemon's
// metric catalogue, one set of device handles per worker, scrape-time gauges read from
// the scheduler and the session manager, a once-a-second update from each worker's
// Stats() (memory, overlap, restarts), the outcome of the last config load, the process_*
// families, and the /metrics, /healthz, /readyz endpoint.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "daemon_metrics.h"
#include "http_endpoint.h"
#include "metrics_registry.h"
#include "scheduler.h"
#include "session_manager.h"
#include "session_meter.h"

namespace conveyor {

class Observability {
 public:
  // Registers the metrics and each worker's series. `gpu_backend`: GpuBackendName().
  static StatusOr<std::unique_ptr<Observability>> Create(Scheduler* scheduler, const std::string& version,
                                                         const std::string& gpu_backend);
  ~Observability();

  // What sessions count into (SessionManager::SetMetrics).
  const SessionMetricsContext* session_metrics() const { return &context_; }

  // Binds the session gauges and starts the HTTP endpoint on `listen` ("" = no endpoint).
  // /healthz answers `alive`; /readyz is ready once gRPC serves (SetAccepting), while not
  // draining and under the cap, and
  // conveyor_ready, conveyor_draining and conveyor_sessions_max say the same at each scrape.
  Status Serve(const std::string& listen, SessionManager* sessions, std::function<Status()> alive);
  // gRPC serves: until this is called, /readyz answers 503 "starting" (the endpoint is bound
  // before gRPC, so that a daemon that cannot take its metrics port stops before serving).
  void SetAccepting(bool accepting) { accepting_ = accepting; }
  // The last config load (the start, or a SIGHUP reload): whether it was applied, and when
  // (Unix time). conveyor_config_last_reload_successful and ..._timestamp_seconds, named
  // after Prometheus's own, so the same alert rules fit.
  void NoteConfigLoad(bool ok, double unix_time_s);
  // workers = "auto" serves on the CPU of a GPU build, and why ("" when it does not):
  // conveyor_workers_cpu_fallback is 1 and /readyz, still 200, says so. Before Serve().
  void NoteCpuFallback(const std::string& reason);

  // conveyor_tls_certificate_expiry_timestamp_seconds{role} from `fn` at each scrape; keep
  // the binding no longer than what `fn` reads.
  StatusOr<metrics::ScopedCallback> BindTlsExpiry(const std::string& role, std::function<double()> fn) {
    return daemon_->BindTlsCertificateExpiry(role, std::move(fn));
  }

  // The endpoint's address with its real port, or "" when there is none.
  std::string address() const { return endpoint_ ? endpoint_->address() : ""; }
  void Stop();

  // The `device` label of worker i: "cpu", or "gpu<index>".
  static std::string DeviceLabel(const WorkerSlot& w);

 private:
  explicit Observability(Scheduler* scheduler) : scheduler_(scheduler) {}
  void UpdateLoop();
  // /readyz and conveyor_ready: gRPC serves, and the session manager takes sessions.
  Status Readiness(const SessionManager& sessions) const;

  Scheduler* const scheduler_;
  metrics::Registry registry_;
  std::unique_ptr<metrics::DaemonMetrics> daemon_;
  SessionMetricsContext context_;
  std::vector<metrics::ScopedCallback> bindings_;
  metrics::Gauge* config_load_ok_ = nullptr;
  metrics::Gauge* config_load_time_ = nullptr;
  metrics::Gauge* cpu_fallback_ = nullptr;
  std::string cpu_fallback_reason_;
  std::vector<uint64_t> restarts_seen_;  // update thread only
  std::unique_ptr<metrics::HttpEndpoint> endpoint_;
  std::atomic<bool> accepting_{false};
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread updater_;
};

}  // namespace conveyor
