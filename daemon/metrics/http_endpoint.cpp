// The operations HTTP endpoint on cpp-httplib (see http_endpoint.h).
#include "http_endpoint.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>

#include "bounded_http_server.h"
#include "exposition.h"
#include "listen_address.h"

namespace conveyor::metrics {

StatusOr<HttpListen> ParseHttpListen(const std::string& text) {
  // One address syntax for the whole daemon: conveyord's own parser, TCP only.
  ASSIGN_OR_RETURN(config::ListenAddress a, config::ParseListenAddress(text));
  if (a.kind != config::ListenAddress::Kind::kTcp) {
    return InvalidArgument("bad metrics listen address '" + text +
                           "': expected HOST:PORT or [IPv6]:PORT (Prometheus scrapes over TCP)");
  }
  return HttpListen{a.host, a.port};
}

HttpEndpoint::HttpEndpoint(Hooks hooks, std::string host) : hooks_(std::move(hooks)), host_(std::move(host)) {}

HttpEndpoint::~HttpEndpoint() { Stop(); }

StatusOr<std::unique_ptr<HttpEndpoint>> HttpEndpoint::Start(const std::string& listen, Hooks hooks) {
  ASSIGN_OR_RETURN(HttpListen l, ParseHttpListen(listen));
  if (hooks.registry == nullptr) return InvalidArgument("metrics endpoint: no registry given");
  std::unique_ptr<HttpEndpoint> e(new HttpEndpoint(std::move(hooks), l.host));
  ASSIGN_OR_RETURN(ConnectionCounters counters, e->RegisterOwnMetrics());
  // The limits' defaults are what this endpoint needs (see ConnectionLimits): a scraper
  // and a few probes, none of which may wait behind a client that stalls.
  e->server_ = std::make_unique<BoundedHttpServer>(ConnectionLimits{}, counters);
  BoundedHttpServer* server = e->server_.get();
  ASSIGN_OR_RETURN(e->open_connections_, e->open_gauge_->Bind({}, [server] {
    return static_cast<double>(server->open_connections());
  }));
  e->Route();
  // httplib's default sets SO_REUSEPORT, which lets a second conveyord bind the same port
  // and silently take half the scrapes. SO_REUSEADDR alone still allows a quick restart.
  e->server_->set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  if (l.port == 0) {
    e->port_ = e->server_->bind_to_any_port(l.host);
    if (e->port_ < 0) return Unavailable("metrics endpoint: cannot bind " + listen);
  } else {
    if (!e->server_->bind_to_port(l.host, l.port)) {
      return Unavailable("metrics endpoint: cannot bind " + listen + " (in use?)");
    }
    e->port_ = l.port;
  }
  e->server_->WidenBacklog();
  auto ended = std::make_shared<std::atomic<bool>>(false);
  e->thread_ = std::thread([server, ended] {
    server->listen_after_bind();
    ended->store(true);
  });
  // httplib's stop() does nothing until the server runs, so a Stop() right after Start()
  // would leave the thread serving forever: return only once it runs (or has failed).
  while (!server->is_running()) {
    if (ended->load()) {
      e->thread_.join();
      return Unavailable("metrics endpoint: serving " + listen + " failed to start");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return e;
}

StatusOr<ConnectionCounters> HttpEndpoint::RegisterOwnMetrics() {
  MetricSpec refused;
  refused.name = "conveyor_http_connections_refused_total";
  refused.help = "Connections to the metrics endpoint closed at accept, the connection cap being reached.";
  MetricSpec timed_out;
  timed_out.name = "conveyor_http_connections_timed_out_total";
  timed_out.help =
      "Connections to the metrics endpoint closed because a request did not arrive whole, or its response was "
      "not taken, within the deadline.";
  timed_out.label_names = {"phase"};
  MetricSpec open;
  open.name = "conveyor_http_open_connections";
  open.help = "Connections the metrics endpoint is serving now, the scrape's own included.";
  // One exposition, so a name may be in only one of the two registries.
  for (const FamilySnapshot& f : hooks_.registry->Collect()) {
    for (const MetricSpec* own : {&refused, &timed_out, &open}) {
      if (f.name == own->name) {
        return InvalidArgument("metrics endpoint: the registry already has " + f.name +
                               ", which the endpoint exports itself");
      }
    }
  }
  ASSIGN_OR_RETURN(CounterFamily * refused_family, own_.AddCounter(refused));
  ASSIGN_OR_RETURN(CounterFamily * timed_out_family, own_.AddCounter(timed_out));
  ASSIGN_OR_RETURN(open_gauge_, own_.AddCallbackGauge(open));
  ConnectionCounters c;
  ASSIGN_OR_RETURN(c.refused, refused_family->WithLabels({}));
  ASSIGN_OR_RETURN(c.request_timed_out, timed_out_family->WithLabels({"request"}));
  ASSIGN_OR_RETURN(c.response_timed_out, timed_out_family->WithLabels({"response"}));
  return c;
}

std::string HttpEndpoint::Render() const {
  std::vector<FamilySnapshot> families = hooks_.registry->Collect();
  for (FamilySnapshot& f : own_.Collect()) families.push_back(std::move(f));
  std::sort(families.begin(), families.end(),
            [](const FamilySnapshot& a, const FamilySnapshot& b) { return a.name < b.name; });
  return RenderText(families);
}

void HttpEndpoint::Route() {
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(Render(), kExpositionContentType);
  });
  // Both probes answer with the status's message, so `curl` shows why.
  auto probe = [](const std::function<Status()>& hook, httplib::Response& res) {
    const Status s = hook ? hook() : OkStatus();
    res.status = s.ok() ? 200 : 503;
    res.set_content(s.ok() ? std::string("ok\n") : s.message() + "\n", "text/plain; charset=utf-8");
  };
  server_->Get("/healthz", [this, probe](const httplib::Request&, httplib::Response& res) {
    probe(hooks_.alive, res);
  });
  server_->Get("/readyz", [this, probe](const httplib::Request&, httplib::Response& res) {
    probe(hooks_.ready, res);
    if (res.status == 200 && !hooks_.ready_note.empty()) res.body += hooks_.ready_note + "\n";
  });
  // The three paths are read-only: another method gets 405 with Allow, as HTTP says,
  // rather than httplib's 400 for a method it has no handler for.
  auto not_allowed = [](const httplib::Request& req, httplib::Response& res) {
    res.status = 405;
    res.set_header("Allow", "GET, HEAD");
    res.set_content(req.method + " is not allowed here; use GET\n", "text/plain; charset=utf-8");
  };
  for (const char* path : {"/metrics", "/healthz", "/readyz"}) {
    server_->Post(path, not_allowed);
    server_->Put(path, not_allowed);
    server_->Patch(path, not_allowed);
    server_->Delete(path, not_allowed);
  }
}

void HttpEndpoint::Stop() {
  if (!thread_.joinable()) return;
  server_->stop();
  // Connections waiting on their clients end now rather than at their deadlines.
  server_->CloseConnections();
  thread_.join();
}

std::string HttpEndpoint::address() const {
  const std::string host = host_.find(':') != std::string::npos ? "[" + host_ + "]" : host_;
  return host + ":" + std::to_string(port_);
}

}  // namespace conveyor::metrics
