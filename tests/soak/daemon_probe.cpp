// Reading the soak daemon's state (see daemon_probe.h).
#include "daemon_probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <httplib.h>

namespace conveyor::soak {


StatusOr<v1::ServerStatus> GetServerStatus(v1::Transcoder::Stub* stub) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::ServerStatus status;
  const grpc::Status s = stub->GetServerStatus(&ctx, v1::GetServerStatusRequest(), &status);
  if (!s.ok()) return Unavailable("GetServerStatus: " + s.error_message());
  return status;
}

StatusOr<std::optional<v1::SessionInfo>> FindSession(v1::Transcoder::Stub* stub, const std::string& id) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::ListSessionsResponse list;
  const grpc::Status s = stub->ListSessions(&ctx, v1::ListSessionsRequest(), &list);
  if (!s.ok()) return Unavailable("ListSessions: " + s.error_message());
  for (const v1::SessionInfo& info : list.sessions()) {
    if (info.session_id() == id) return std::optional<v1::SessionInfo>(info);
  }
  return std::optional<v1::SessionInfo>();
}

uint64_t WorkerCalls(const v1::ServerStatus& status) {
  if (status.workers_size() == 0) return 0;
  return status.workers(0).frames_done() + status.workers(0).frames_failed();
}

StatusOr<v1::ServerStatus> WaitForQuiet(v1::Transcoder::Stub* stub, double timeout_s) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  uint64_t last_calls = UINT64_MAX;
  int steady = 0;
  v1::ServerStatus status;
  while (std::chrono::steady_clock::now() < give_up) {
    ASSIGN_OR_RETURN(status, GetServerStatus(stub));
    const bool idle = status.sessions_active() == 0 && status.workers_size() > 0 &&
                      status.workers(0).sessions() == 0 && status.workers(0).queue_depth() == 0;
    const uint64_t calls = WorkerCalls(status);
    steady = idle && calls == last_calls ? steady + 1 : 0;
    last_calls = calls;
    if (steady >= 3) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Status(StatusCode::kDeadlineExceeded,
                "the daemon did not go quiet within " + std::to_string(timeout_s) + " s: " +
                    std::to_string(status.sessions_active()) + " sessions active, worker lanes " +
                    std::to_string(status.workers_size() ? status.workers(0).sessions() : 0));
}

StatusOr<std::map<std::string, double>> ScrapeSeries(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2);
  client.set_read_timeout(5);
  const auto reply = client.Get("/metrics");
  if (!reply) return Unavailable("GET /metrics on port " + std::to_string(port) + ": no answer");
  if (reply->status != 200) return Unavailable("GET /metrics: HTTP " + std::to_string(reply->status));
  std::map<std::string, double> series;
  std::istringstream lines(reply->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t value_at = line.rfind(' ');
    if (value_at == std::string::npos) continue;
    series[line.substr(0, value_at)] = std::strtod(line.c_str() + value_at + 1, nullptr);
  }
  return series;
}

std::map<std::string, double> SumByFamily(const std::map<std::string, double>& series) {
  std::map<std::string, double> sums;
  for (const auto& [name, value] : series) sums[name.substr(0, name.find('{'))] += value;
  return sums;
}

StatusOr<std::map<std::string, double>> ScrapeMetrics(int port) {
  StatusOr<std::map<std::string, double>> series = ScrapeSeries(port);
  if (!series.ok()) return series.status();
  return SumByFamily(*series);
}

bool WaitForHeapRelease(int metrics_port, double seen, double timeout_s) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < give_up) {
    StatusOr<std::map<std::string, double>> m = ScrapeMetrics(metrics_port);
    if (m.ok() && m->count("conveyor_idle_heap_releases_total") > 0 &&
        m->at("conveyor_idle_heap_releases_total") > seen) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

uint64_t SettledRss(const e2e::DaemonProcess& daemon) {
  using Clock = std::chrono::steady_clock;
  uint64_t last = daemon.RssBytes();
  const Clock::time_point give_up = Clock::now() + std::chrono::seconds(10);
  for (Clock::time_point since = Clock::now(); Clock::now() < give_up;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    const uint64_t now = daemon.RssBytes();
    if (now > last + (1 << 20) || now + (1 << 20) < last) since = Clock::now();  // moved by over 1 MiB
    if (Clock::now() - since >= std::chrono::milliseconds(1500)) return now;
    last = now;
  }
  return last;
}

bool ProcessAlive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string pid_field, comm, state;
  // comm is "(conveyord)": no spaces in it.
  if (!(in >> pid_field >> comm >> state)) return false;
  return state != "Z" && state != "X";
}

}  // namespace conveyor::soak
