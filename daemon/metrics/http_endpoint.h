// The operations HTTP endpoint: GET /metrics (Prometheus text), /healthz (liveness) and
// /readyz (readiness), served by cpp-httplib on its own threads. Start() binds and
// serves; Stop() (or the destructor) closes the socket and joins. Slow or stuck clients
// cannot starve the probes: each connection has its own thread up to a cap, and one that
// has not sent its whole request within a deadline is closed (BoundedHttpServer).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "metrics_registry.h"
#include "status.h"

namespace conveyor::metrics {

class BoundedHttpServer;
struct ConnectionCounters;

// "HOST:PORT" or "[IPv6]:PORT" (the TCP half of conveyord's listen syntax; no unix
// sockets, since Prometheus scrapes over TCP). Port 0 picks a free port.
struct HttpListen {
  std::string host;  // IPv6 without brackets
  int port = 0;
};
StatusOr<HttpListen> ParseHttpListen(const std::string& text);

class HttpEndpoint {
 public:
  struct Hooks {
    const Registry* registry = nullptr;  // required; must outlive the endpoint
    // Liveness: OK while the process can do work (no wedged worker). An error answers 503
    // with its message. Unset means alive.
    std::function<Status()> alive;
    // Readiness: OK while new sessions are taken; e.g. Unavailable("draining"). Unset
    // means ready.
    std::function<Status()> ready;
    // A line /readyz adds to its 200 answer: ready, but the operator should know (e.g. a
    // GPU host encoding on the CPU). Empty: none.
    std::string ready_note;
  };

  // Binds `listen` ("127.0.0.1:9100", "[::1]:0") and serves until Stop(). INVALID_ARGUMENT
  // on a bad address, a missing registry or one that already has a family of the
  // endpoint's own (below), UNAVAILABLE when the address cannot be bound.
  //
  // /metrics also carries the endpoint's own families, about its connection limits:
  // conveyor_http_connections_refused_total (closed at accept, at the cap),
  // conveyor_http_connections_timed_out_total{phase="request"|"response"} (closed at a
  // deadline) and conveyor_http_open_connections.
  static StatusOr<std::unique_ptr<HttpEndpoint>> Start(const std::string& listen, Hooks hooks);

  ~HttpEndpoint();
  HttpEndpoint(const HttpEndpoint&) = delete;
  HttpEndpoint& operator=(const HttpEndpoint&) = delete;

  // Idempotent. Returns once the serving thread has ended.
  void Stop();

  int port() const { return port_; }
  // "127.0.0.1:9100" or "[::1]:9100", the bound port included: a scrape target.
  std::string address() const;

 private:
  HttpEndpoint(Hooks hooks, std::string host);
  StatusOr<ConnectionCounters> RegisterOwnMetrics();
  void Route();
  std::string Render() const;

  Hooks hooks_;
  std::string host_;
  int port_ = 0;
  Registry own_;  // the endpoint's own families, rendered along with hooks_.registry
  CallbackGaugeFamily* open_gauge_ = nullptr;
  std::unique_ptr<BoundedHttpServer> server_;
  ScopedCallback open_connections_;  // reads server_
  std::thread thread_;
};

}  // namespace conveyor::metrics
