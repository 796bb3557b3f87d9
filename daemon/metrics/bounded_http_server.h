// An httplib::Server that slow or idle clients cannot take over. httplib 0.11 serves
// connections on a fixed pool of threads and bounds each recv() only, so a client that
// sends one header line a second holds a thread for ever, and a few such clients leave
// nothing for the probes. Here each connection has its own thread, up to a cap past which
// new connections are closed at accept, and a request must arrive whole, and its response
// be taken, within fixed deadlines, however the bytes are paced.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <set>

#include "metrics_registry.h"

namespace conveyor::metrics {

struct ConnectionLimits {
  // Connections served at once, each on its own thread (a few KiB of stack in use, one
  // fd). Scrapers and probes need a handful; 64 clients stuck mid-request still leave
  // half. Past the cap a new connection, a probe's too, is closed at accept: the cap
  // bounds the daemon's threads and descriptors, the request deadline frees the slots.
  size_t max_connections = 128;
  // From accept, or from the end of the previous response on a kept-alive connection,
  // to the last byte of the request (head and body), however slowly it trickles: one
  // retransmission on a bad link fits, and a stuck client frees its slot well within a
  // scrape interval. A connection past it is closed without an answer.
  std::chrono::milliseconds request_deadline{2000};
  // No byte of a request within this: the connection is closed quietly. It bounds a
  // kept-alive connection between requests, and responses announce it (Keep-Alive).
  std::chrono::seconds idle_timeout{1};
  // From the first byte of a response to its last, for a client that reads slowly or
  // not at all: a /metrics body is tens of KiB.
  std::chrono::milliseconds response_deadline{5000};
  // Requests on one connection before it is closed; responses announce it too.
  size_t max_requests_per_connection = 5;
  // Connections the kernel queues before accept(); httplib's 5 drops the SYNs of a burst,
  // which then retry after a second.
  int listen_backlog = 128;
};

// Where the server counts what its limits did; null members are not counted.
struct ConnectionCounters {
  Counter* refused = nullptr;             // closed at accept, the cap being reached
  Counter* request_timed_out = nullptr;   // closed at the request deadline
  Counter* response_timed_out = nullptr;  // closed at the response deadline
};

class BoundedHttpServer final : public httplib::Server {
 public:
  BoundedHttpServer(ConnectionLimits limits, ConnectionCounters counters);

  // Call after a successful bind_to_port() / bind_to_any_port(): applies listen_backlog.
  void WidenBacklog();
  // Call after stop(): shuts down every open connection and refuses any that an accept
  // in progress still hands over, so that the serving thread's join is prompt.
  void CloseConnections();
  // Connections being served now.
  size_t open_connections() const;

  const ConnectionLimits& limits() const { return limits_; }

 private:
  // httplib calls this on the connection's thread with the accepted socket; it owns it.
  bool process_and_close_socket(socket_t sock) override;
  void Serve(socket_t sock);
  bool Register(socket_t sock);
  void Unregister(socket_t sock);

  const ConnectionLimits limits_;
  const ConnectionCounters counters_;
  mutable std::mutex mu_;
  std::set<socket_t> open_;  // sockets of the connections being served
  bool closing_ = false;
};

}  // namespace conveyor::metrics
