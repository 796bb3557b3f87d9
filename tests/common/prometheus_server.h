// A real Prometheus server for tests: started from /usr/bin/prometheus on a free loopback
// port with a throwaway TSDB, scraping the given targets every second, queried through its
// HTTP API. Killed (with its temp dir removed) when the object goes away.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "status.h"

namespace conveyor::testing {

class PrometheusServer {
 public:
  struct Options {
    std::vector<std::string> targets;  // "127.0.0.1:9100"; scraped at /metrics
    std::string job = "conveyor";
    int scrape_interval_s = 1;
    std::string binary = "/usr/bin/prometheus";
    std::chrono::milliseconds ready_timeout{15000};
  };

  // NOT_FOUND when the binary is missing; UNAVAILABLE when it keeps exiting at start and
  // DEADLINE_EXCEEDED when it is not ready in time, both with the server's log tail.
  static StatusOr<std::unique_ptr<PrometheusServer>> Start(const Options& options);
  ~PrometheusServer();
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  // An instant query whose answer is one number: a scalar, or a vector of exactly one
  // sample. NOT_FOUND for an empty vector (nothing scraped yet), INVALID_ARGUMENT for
  // a query Prometheus refuses, FAILED_PRECONDITION for several samples.
  StatusOr<double> Query(const std::string& promql) const;

  // Polls Query() until it gives `expected` or `timeout` passes; the last error or value
  // otherwise, in a DEADLINE_EXCEEDED status.
  Status WaitForValue(const std::string& promql, double expected,
                      std::chrono::milliseconds timeout) const;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // The end of the server's own log, for failure messages.
  std::string LogTail(size_t bytes = 4000) const;

 private:
  PrometheusServer() = default;
  Status Launch(const Options& options);
  bool Ready() const;
  void Kill();  // SIGTERM, then SIGKILL after 5 s; reaps it

  std::string dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

// Pulls the one number out of a /api/v1/query answer (exposed for tests of the parser).
StatusOr<double> ParseQueryResult(const std::string& json);

}  // namespace conveyor::testing
