// The operations HTTP endpoint: GET /metrics (Prometheus text), /healthz (liveness) and
// /readyz (readiness), served by cpp-httplib on its own threads. Start() binds and
// serves; Stop() (or the destructor) closes the socket and joins.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "metrics_registry.h"
#include "status.h"

namespace httplib {
class Server;
}

namespace conveyor::metrics {

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
  };

  // Binds `listen` ("127.0.0.1:9100", "[::1]:0") and serves until Stop(). INVALID_ARGUMENT
  // on a bad address or a missing registry, UNAVAILABLE when the address cannot be bound.
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
  void Route();

  Hooks hooks_;
  std::string host_;
  int port_ = 0;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

}  // namespace conveyor::metrics
