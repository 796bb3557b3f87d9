// conveyord: parse options, start logging, create the workers, the scheduler and the
// session manager, serve gRPC and the metrics/health endpoint, list their bound addresses
// in server.endpoints_file, tell systemd READY=1 and keep it informed (status, watchdog),
// reload limits and the log level on SIGHUP (reporting the outcome), and on SIGTERM/SIGINT
// drain: health goes NOT_SERVING, new streams get UNAVAILABLE, running sessions get up to
// drain_timeout_s, or until a second SIGTERM/SIGINT. `conveyord reload` asks it to reload.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <grpc/grpc.h>
#include <spdlog/spdlog.h>

#include "allocator_tuning.h"
#include "config_reload.h"
#include "config_reload_signal.h"
#include "daemon_config.h"
#include "doctor.h"
#include "drain.h"
#include "endpoints_file.h"
#include "fatal_signal.h"
#include "ffmpeg_log.h"
#include "gpu_encoder.h"
#include "grpc_log.h"
#include "heartbeat.h"
#include "logging.h"
#include "observability.h"
#include "reload_command.h"
#include "reload_outcome.h"
#include "rpc_server.h"
#include "scheduler.h"
#include "service_monitor.h"
#include "session_manager.h"
#include "session_settings.h"
#include "signal_waiter.h"
#include "systemd_notifier.h"
#include "worker_startup.h"

namespace conveyor {
namespace {

// The main loop wakes this often while it waits for signals; each wake takes the session
// manager's lock, which every stream's start and end goes through.
constexpr double kMainLoopTickS = 1;
// The watchdog's liveness check: the main loop has woken within this long. Ten missed ticks
// mean a stuck main thread or a session manager lock held (deadlocked) for seconds.
constexpr double kMainLoopStaleS = 10;
// Liveness also needs every worker thread to have run this recently (idle ones wake every
// second); a GPU wait that never returns shows here.
constexpr double kWorkerStaleS = 10;

// conveyor_tls_certificate_expiry_timestamp_seconds from the certificates `server` serves
// and checks clients against, read at each scrape, so a reload shows at once; none
// without TLS. The bindings must go before `server`.
StatusOr<std::vector<metrics::ScopedCallback>> ExportTlsExpiry(Observability& observability,
                                                               const RpcServer& server) {
  std::vector<metrics::ScopedCallback> bindings;
  const ReloadableServerTls* tls = server.tls();
  if (tls == nullptr) return bindings;
  ASSIGN_OR_RETURN(metrics::ScopedCallback served,
                   observability.BindTlsExpiry("server", [tls] { return tls->server_not_after_s(); }));
  bindings.push_back(std::move(served));
  // Mutual TLS is on or off for the daemon's life: a reload cannot change it.
  if (!tls->material().client_ca.empty()) {
    ASSIGN_OR_RETURN(metrics::ScopedCallback ca,
                     observability.BindTlsExpiry("client_ca", [tls] { return tls->client_ca_not_after_s(); }));
    bindings.push_back(std::move(ca));
  }
  return bindings;
}

void LogIfError(const Status& s) {
  if (!s.ok()) spdlog::warn("{}", s.ToString());
}

int Run(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "doctor") {
    return doctor::DoctorMain("conveyord doctor", std::vector<std::string>(argv + 2, argv + argc));
  }
  if (argc > 1 && std::string(argv[1]) == "reload") {
    return ReloadCommandMain(std::vector<std::string>(argv + 2, argv + argc));
  }
  StatusOr<config::CommandLine> cl = config::ParseCommandLine(argc, argv);
  if (!cl.ok()) {
    std::fprintf(stderr, "conveyord: %s\n", cl.status().message().c_str());
    return 2;
  }
  if (cl->exit_now) {
    std::fputs(cl->output.c_str(), stdout);
    return cl->exit_code;
  }
  const ReloadOutcome first_load = ReloadOutcome::BeginningNow();  // the config just read
  const config::DaemonConfig& c = cl->config;
  if (Status s = config::InitLogging(c.log_level); !s.ok()) {
    std::fprintf(stderr, "conveyord: %s\n", s.ToString().c_str());
    return 2;
  }
  ReportFatalSignals();
  RouteFfmpegLogToDaemonLog();
  RouteGrpcLogToDaemonLog();
  spdlog::info("conveyord {} starting{}", config::ConveyorVersion(),
               cl->config_path.empty() ? "" : " with " + cl->config_path);
  for (const std::string& notice : cl->notices) spdlog::warn("{}", notice);
  config::ConfigReloader reloader(std::vector<std::string>(argv, argv + argc), *cl);

  // Blocks SIGTERM, SIGINT and SIGHUP before any thread starts; the main thread takes them.
  SignalWaiter signals;
  SystemdNotifier notifier;

  TuneAllocatorForFrames();
  StatusOr<StartedWorkers> workers = StartWorkers(c, cl->test_fault_every);
  if (!workers.ok()) {
    spdlog::error("{}", workers.status().ToString());
    return 1;
  }
  Scheduler scheduler(std::move(workers->workers));
  StatusOr<std::unique_ptr<Observability>> observability =
      Observability::Create(&scheduler, config::ConveyorVersion(), GpuBackendName());
  if (!observability.ok()) {
    spdlog::error("metrics: {}", observability.status().ToString());
    return 1;
  }
  (*observability)->NoteCpuFallback(workers->cpu_fallback);
  SessionManager sessions(&scheduler, SessionOptionsFromConfig(c), SessionLimitsFromConfig(c));
  sessions.SetMetrics((*observability)->session_metrics());
  (*observability)->NoteConfigLoad(true, first_load.unix_time_s);

  // The metrics port is bound before gRPC serves: a daemon that cannot take its port stops
  // before any client reaches it. /readyz says "starting" until gRPC serves.
  Heartbeats main_loop(1);  // the main thread is its one thread
  auto alive = [&]() -> Status {
    if (main_loop.StalestSeconds() >= kMainLoopStaleS) return Unavailable("the main loop is not running");
    return scheduler.CheckWorkersAlive(kWorkerStaleS);
  };
  if (Status s = (*observability)->Serve(c.metrics_listen, &sessions, alive); !s.ok()) {
    spdlog::error("metrics endpoint: {}", s.ToString());
    return 1;
  }
  if (!c.metrics_listen.empty()) spdlog::info("metrics and health on http://{}", (*observability)->address());

  // The last grpc_shutdown() joins gRPC's executor threads, and one of them may sit in
  // the TCP backup poller, a 10 s epoll wait that starts whenever a write meets a full
  // socket: the exit then stalled for up to 10 s after "stopped" (in 6 of 16 runs of
  // e2e.DaemonCancel). This reference is never given back, so ~Server shuts the server
  // down and leaves the library to the process's exit.
  grpc_init();
  StatusOr<std::unique_ptr<RpcServer>> server = RpcServer::Start(c, &sessions,
                                                                 config::ConveyorVersion());
  if (!server.ok()) {
    spdlog::error("{}", server.status().ToString());
    return 1;
  }
  for (const std::string& e : (*server)->endpoints()) spdlog::info("listening on {}", e);
  StatusOr<std::vector<metrics::ScopedCallback>> tls_expiry = ExportTlsExpiry(**observability, **server);
  if (!tls_expiry.ok()) {
    spdlog::error("metrics: {}", tls_expiry.status().ToString());
    return 1;
  }
  (*observability)->SetAccepting(true);
  // SIGHUP also reads the token file and the TLS files again.
  reloader.set_credential_reload([&server] { return (*server)->ReloadCredentials(); });

  StatusOr<EndpointsFile> endpoints =
      EndpointsFile::Write(c.endpoints_file, (*server)->endpoints(), (*observability)->address());
  if (!endpoints.ok()) {
    spdlog::error("{}", endpoints.status().ToString());
    return 1;
  }
  if (!c.endpoints_file.empty()) spdlog::info("bound addresses in {}", c.endpoints_file);
  ServiceMonitor monitor(&notifier, &sessions, [&] { return alive().ok(); });
  ReloadOutcomeFile reload_outcome(ReloadOutcomePath());
  auto on_reload = [&](const ReloadOutcome& outcome) {
    (*observability)->NoteConfigLoad(outcome.ok, outcome.unix_time_s);
    monitor.SetReloadRefusal(outcome.ok ? "" : outcome.error);
    LogIfError(reload_outcome.Write(outcome));
  };
  LogIfError(notifier.Ready(monitor.SampleStatus()));
  monitor.Start();

  // grpc.health.v1 follows readiness (as /readyz does): at once on each change the
  // session manager reports (the cap reached, the drain), and on every tick as well;
  // Watch streams each change.
  std::mutex serving_mu;
  bool serving = true;
  auto set_serving = [&](bool ready) {
    std::lock_guard<std::mutex> lock(serving_mu);
    if (ready != serving) (*server)->SetServing(serving = ready);
  };
  sessions.SetReadinessListener(set_serving);
  auto follow_readiness = [&] {
    set_serving(sessions.Ready().ok());  // takes the session manager's lock: it is not stuck
  };
  SignalWaiter::Received received{};
  for (;;) {
    received = signals.Wait(kMainLoopTickS, [&] {
      follow_readiness();
      main_loop.Beat(0);
    });
    if (received.action == SignalWaiter::Action::kStop) break;
    ReloadOnSighup(&reloader, &sessions, &notifier, on_reload, [&] { return monitor.SampleStatus(); });
    main_loop.Beat(0);
  }

  DrainOptions drain;
  drain.timeout_s = reloader.running().drain_timeout_s;
  spdlog::info("signal {}: draining ({} sessions, up to {} s; a second signal ends it)", received.signal_number,
               sessions.active(), drain.timeout_s);
  sessions.StartDrain();  // NOT_SERVING from here on
  const DrainEnd end = Drain(drain, &sessions, &signals, &notifier, &monitor, &main_loop);
  sessions.SetReadinessListener(nullptr);
  // Sessions the drain cancelled send their status first. What is left then are calls
  // that never end on their own (a balancing client's grpc.health.v1 Watch) and unary
  // calls that take milliseconds: a short deadline ends the one without cutting the other,
  // where a long one would hold the exit for as long as any client watches.
  if (end != DrainEnd::kIdle) sessions.WaitUntilIdle(2.0);
  (*server)->Shutdown(0.25);
  (*observability)->Stop();
  monitor.Stop();
  spdlog::info("stopped");
  return 0;
}

}  // namespace
}  // namespace conveyor

int main(int argc, char** argv) { return conveyor::Run(argc, argv); }
