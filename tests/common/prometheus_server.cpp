// Starts, queries and stops a real Prometheus for tests (see prometheus_server.h).
#include "prometheus_server.h"

#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <httplib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "test_process.h"
#include "unique_fd.h"

namespace conveyor::testing {
namespace {

// A loopback TCP port nobody listens on right now (the kernel's pick); -1 on failure.
// Prometheus cannot report a port it picked itself, so it gets this one, and another
// process may take it first: Start() retries. conveyord binds port 0 and reports what it
// bound instead (DaemonProcess::tcp_port(), metrics_port()).
int FreeLoopbackPort() {
  const UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    return -1;
  }
  return ntohs(a.sin_port);
}

// The text between the quotes that start at json[pos], without unescaping.
std::string QuotedAt(const std::string& json, size_t pos) {
  if (pos >= json.size() || json[pos] != '"') return std::string();
  std::string out;
  for (size_t i = pos + 1; i < json.size() && json[i] != '"'; ++i) {
    if (json[i] == '\\' && i + 1 < json.size()) ++i;
    out += json[i];
  }
  return out;
}

// A sample is [<unix time>,"<value>"]; `pos` is just after the '['.
StatusOr<double> ParseSamplePair(const std::string& json, size_t pos) {
  const size_t comma = json.find(',', pos);
  if (comma == std::string::npos) return Internal("no value in the sample: " + json);
  const std::string text = QuotedAt(json, comma + 1);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') return Internal("sample value '" + text + "' is not a number");
  return v;
}

}  // namespace

// Prometheus writes compact JSON with keys in a fixed order, and a label value that
// contains `"value":[` appears escaped, so finding keys by their text is safe here.
StatusOr<double> ParseQueryResult(const std::string& json) {
  if (json.find("\"status\":\"success\"") == std::string::npos) {
    const size_t e = json.find("\"error\":");
    const std::string why = e == std::string::npos ? json : QuotedAt(json, e + 8);
    return InvalidArgument("prometheus refused the query: " + why);
  }
  const size_t t = json.find("\"resultType\":");
  const size_t r = json.find("\"result\":[");
  if (t == std::string::npos || r == std::string::npos) return Internal("unexpected answer: " + json);
  const std::string type = QuotedAt(json, t + 13);
  const size_t after = r + 10;
  if (type == "scalar") return ParseSamplePair(json, after);
  if (type != "vector") return Internal("result type '" + type + "' is not a scalar or a vector");
  if (json.compare(after, 1, "]") == 0) return NotFound("the query gave no samples (yet)");
  const size_t v = json.find("\"value\":[", after);
  if (v == std::string::npos) return Internal("no value in: " + json);
  if (json.find("\"value\":[", v + 1) != std::string::npos) {
    return FailedPrecondition("the query gave several samples: " + json);
  }
  return ParseSamplePair(json, v + 9);
}

StatusOr<std::unique_ptr<PrometheusServer>> PrometheusServer::Start(const Options& options) {
  if (access(options.binary.c_str(), X_OK) != 0) {
    return NotFound(options.binary + " is missing (apt-get install prometheus)");
  }
  std::unique_ptr<PrometheusServer> s(new PrometheusServer());
  s->dir_ = MakeTempDir("conveyor-prometheus");
  if (s->dir_.empty()) return Internal("cannot create a temp dir for prometheus");

  std::ofstream config(s->dir_ + "/prometheus.yml");
  const std::string interval = std::to_string(options.scrape_interval_s) + "s";
  config << "global:\n  scrape_interval: " << interval << "\n  scrape_timeout: " << interval
         << "\n  evaluation_interval: " << interval << "\nscrape_configs:\n  - job_name: "
         << options.job << "\n    static_configs:\n      - targets: [";
  for (size_t i = 0; i < options.targets.size(); ++i) {
    config << (i > 0 ? ", " : "") << "'" << options.targets[i] << "'";
  }
  config << "]\n";
  config.close();
  if (!config) return Internal("cannot write " + s->dir_ + "/prometheus.yml");

  // An early exit (UNAVAILABLE) is most likely a lost race for the port: try another.
  Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    last = s->Launch(options);
    if (last.ok()) return s;
    if (last.code() != StatusCode::kUnavailable) break;
  }
  return last;
}

Status PrometheusServer::Launch(const Options& options) {
  // Another process may take the port before Prometheus binds; Start() retries on a
  // fresh port when the server exits early.
  port_ = FreeLoopbackPort();
  if (port_ < 0) return Internal(std::string("no free loopback port: ") + std::strerror(errno));
  // Everything the child needs is built before fork(): after it, only exec-safe calls.
  const std::vector<std::string> args = {
      options.binary,
      "--config.file=" + dir_ + "/prometheus.yml",
      "--storage.tsdb.path=" + dir_ + "/data",
      "--web.listen-address=127.0.0.1:" + std::to_string(port_),
  };
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::string log = dir_ + "/prometheus.log";
  const pid_t parent = getpid();

  pid_ = fork();
  if (pid_ < 0) return Internal(std::string("fork: ") + std::strerror(errno));
  if (pid_ == 0) {
    // Dies with the test (also when it crashes), so no server outlives a run.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    const int null = open("/dev/null", O_RDONLY);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    if (null >= 0) dup2(null, STDIN_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }

  const auto deadline = std::chrono::steady_clock::now() + options.ready_timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int wstatus = 0;
    if (waitpid(pid_, &wstatus, WNOHANG) == pid_) {
      pid_ = -1;  // exited early, most likely its port was taken meanwhile
      return Unavailable("prometheus exited while starting; log:\n" + LogTail());
    }
    if (Ready()) return OkStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  Kill();
  return Status(StatusCode::kDeadlineExceeded,
                "prometheus was not ready within " + std::to_string(options.ready_timeout.count()) +
                    " ms; log:\n" + LogTail());
}

bool PrometheusServer::Ready() const {
  httplib::Client client("127.0.0.1", port_);
  client.set_connection_timeout(0, 200000);
  const httplib::Result res = client.Get("/-/ready");
  return res && res->status == 200;
}

void PrometheusServer::Kill() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    int wstatus = 0;
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {  // up to 5 s for a clean TSDB shutdown
      gone = waitpid(pid_, &wstatus, WNOHANG) == pid_;
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (!gone) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &wstatus, 0);
    }
  }
  pid_ = -1;
}

PrometheusServer::~PrometheusServer() {
  Kill();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

StatusOr<double> PrometheusServer::Query(const std::string& promql) const {
  httplib::Client client("127.0.0.1", port_);
  client.set_connection_timeout(1, 0);
  client.set_read_timeout(5, 0);
  const httplib::Result res = client.Get("/api/v1/query", httplib::Params{{"query", promql}},
                                         httplib::Headers{});
  if (!res) return Unavailable("prometheus query failed: " + httplib::to_string(res.error()));
  return ParseQueryResult(res->body);
}

Status PrometheusServer::WaitForValue(const std::string& promql, double expected,
                                      std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string last;
  for (;;) {
    const StatusOr<double> v = Query(promql);
    if (v.ok() && v.value() == expected) return OkStatus();
    last = v.ok() ? "value " + std::to_string(v.value()) : v.status().ToString();
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return Status(StatusCode::kDeadlineExceeded,
                "'" + promql + "' did not reach " + std::to_string(expected) + " in " +
                    std::to_string(timeout.count()) + " ms; last: " + last);
}

std::string PrometheusServer::LogTail(size_t bytes) const {
  std::ifstream in(dir_ + "/prometheus.log");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string all = ss.str();
  return all.size() > bytes ? all.substr(all.size() - bytes) : all;
}

}  // namespace conveyor::testing
