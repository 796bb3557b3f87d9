// conveyord: parse options, start logging, create the workers, the scheduler and the
// session manager, serve gRPC, and on SIGTERM/SIGINT drain: health goes NOT_SERVING, new
// streams get UNAVAILABLE, running sessions get up to drain_timeout_s to finish.
#include <signal.h>

#include <cstdio>
#include <memory>
#include <vector>

#include <spdlog/spdlog.h>

#include "allocator_tuning.h"
#include "daemon_config.h"
#include "gpu_encoder.h"
#include "logging.h"
#include "rpc_server.h"
#include "scheduler.h"
#include "session_manager.h"

namespace conveyor {
namespace {

const char* GpuBackendName() {
#if defined(CONVEYOR_GPU_NVIDIA)
  return "hip-nvidia";
#elif defined(CONVEYOR_GPU_AMD)
  return "hip-amd";
#else
  return "none";
#endif
}

StatusOr<std::vector<WorkerSlot>> CreateWorkers(const config::DaemonConfig& c) {
  WorkerOptions options;
  options.slots = c.gpu_slots;
  options.max_launch_frames = c.gpu_launch_frames;
  options.max_width = c.max_width;
  options.max_height = c.max_height;
  options.cpu_threads = c.cpu_threads;
  std::vector<WorkerSlot> workers;
  if (c.workers != "cpu") {
    const GpuProbe probe = ProbeGpus();
    for (const GpuDeviceInfo& d : probe.devices) {
      StatusOr<std::unique_ptr<Worker>> w = MakeGpuWorker(d.index, options);
      if (!w.ok()) {
        spdlog::warn("gpu {} ({}): not used: {}", d.index, d.name, w.status().ToString());
        continue;
      }
      spdlog::info("worker: {} ({} MiB)", (*w)->Describe(), d.total_memory >> 20);
      workers.push_back({std::move(w).value(), GpuBackendName(), d.name, d.total_memory});
    }
    if (probe.devices.empty()) spdlog::info("no GPU: {}", probe.unavailable_reason);
    if (workers.empty() && c.workers == "gpu") return Unavailable("workers = \"gpu\" but no GPU worker could start");
  }
  if (workers.empty()) {
    std::unique_ptr<Worker> cpu = MakeCpuWorker(options);
    spdlog::info("worker: {}", cpu->Describe());
    workers.push_back({std::move(cpu), "cpu", "", 0});
  }
  return workers;
}

int Run(int argc, char** argv) {
  StatusOr<config::CommandLine> cl = config::ParseCommandLine(argc, argv);
  if (!cl.ok()) {
    std::fprintf(stderr, "conveyord: %s\n", cl.status().message().c_str());
    return 2;
  }
  if (cl->exit_now) {
    std::fputs(cl->output.c_str(), stdout);
    return cl->exit_code;
  }
  const config::DaemonConfig& c = cl->config;
  if (Status s = config::InitLogging(c.log_level); !s.ok()) {
    std::fprintf(stderr, "conveyord: %s\n", s.ToString().c_str());
    return 2;
  }
  spdlog::info("conveyord {} starting{}", config::ConveyorVersion(),
               cl->config_path.empty() ? "" : " with " + cl->config_path);

  // Block the stop signals in every thread; the main thread waits for them below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  TuneAllocatorForFrames();
  StatusOr<std::vector<WorkerSlot>> workers = CreateWorkers(c);
  if (!workers.ok()) {
    spdlog::error("{}", workers.status().ToString());
    return 1;
  }
  Scheduler scheduler(std::move(workers).value());
  SessionOptions so;
  so.limits.max_width = c.max_width;
  so.limits.max_height = c.max_height;
  so.limits.max_frame_rate = c.max_frame_rate;
  so.queue_frames = c.session_queue_frames;
  so.output_bytes = c.session_output_bytes;
  so.input_bytes = static_cast<size_t>(c.input_queue_bytes);
  so.max_input_bytes = c.max_session_bytes;
  so.decode_threads = c.decode_threads;
  SessionManager sessions(&scheduler, so, SessionLimits{c.max_sessions, c.idle_timeout_s});

  StatusOr<std::unique_ptr<RpcServer>> server = RpcServer::Start(c.EffectiveListen(), &sessions,
                                                                 config::ConveyorVersion());
  if (!server.ok()) {
    spdlog::error("{}", server.status().ToString());
    return 1;
  }
  for (const std::string& e : (*server)->endpoints()) spdlog::info("listening on {}", e);

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  spdlog::info("signal {}: draining ({} sessions, up to {} s)", signal_number, sessions.active(), c.drain_timeout_s);
  sessions.StartDrain();
  (*server)->SetServing(false);
  if (!sessions.WaitUntilIdle(c.drain_timeout_s)) {
    spdlog::warn("drain timeout: cancelling {} sessions", sessions.active());
    for (auto& s : sessions.List()) s->Cancel(Unavailable("the server is shutting down (drain timeout)"));
  }
  (*server)->Shutdown(2.0);
  spdlog::info("stopped");
  return 0;
}

}  // namespace
}  // namespace conveyor

int main(int argc, char** argv) { return conveyor::Run(argc, argv); }
