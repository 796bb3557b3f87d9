// The HTTP endpoint under slow clients: 64 connections that trickle a request head one
// header line a second never keep /healthz, /readyz and /metrics from answering, and the
// server cuts each of them at its request deadline; past the connection cap a new
// connection is closed at once, and the endpoint counts both in its own metrics.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bounded_http_server.h"
#include "http_endpoint.h"
#include "metrics_scrape.h"
#include "unique_fd.h"

namespace conveyor::metrics {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using testing::SampleValue;

const ConnectionLimits kLimits{};
// Scheduling on a busy test machine: how late a close or an answer may come.
constexpr milliseconds kSlack{1000};
// What a probe gets before it counts as failed (kubelet's and curl's timeouts are this
// order); the slow clients must never push an answer past it.
constexpr milliseconds kProbeTimeout{2000};

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

UniqueFd ConnectTo(int port) {
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return fd;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) return UniqueFd();
  return fd;
}

bool SendAll(int fd, const std::string& s) {
  return send(fd, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size());
}

// Keeps `count` connections open that each send a request line and then one header line
// a second, never the blank line that ends the head. One the server closes is opened
// again at once, so the pressure lasts; each close is timed from the connect.
class SlowClients {
 public:
  SlowClients(int port, int count) : port_(port), count_(count) {
    thread_ = std::thread([this] { Run(); });
  }
  ~SlowClients() {
    stop_ = true;
    thread_.join();
  }

  struct Stats {
    int opened = 0;
    int connect_failures = 0;
    int closed_by_server = 0;
    int answered = 0;  // the server sent bytes before closing
    double longest_s = 0;
  };
  Stats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  struct Conn {
    UniqueFd fd;
    Clock::time_point opened;
    Clock::time_point next_line;
    int lines = 0;
  };

  void Open(Conn& c) {
    c.fd = ConnectTo(port_);
    c.opened = Clock::now();
    c.next_line = c.opened + std::chrono::seconds(1);
    c.lines = 0;
    std::lock_guard<std::mutex> lock(mu_);
    if (!c.fd.valid() || !SendAll(c.fd.get(), "GET /metrics HTTP/1.1\r\nHost: slow\r\n")) {
      ++stats_.connect_failures;
      c.fd = UniqueFd();
      return;
    }
    ++stats_.opened;
  }

  void Closed(Conn& c, bool answered) {
    const double lived = Seconds(Clock::now() - c.opened);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.closed_by_server;
      if (answered) ++stats_.answered;
      stats_.longest_s = std::max(stats_.longest_s, lived);
    }
    Open(c);
  }

  void Run() {
    std::vector<Conn> conns(static_cast<size_t>(count_));
    for (Conn& c : conns) Open(c);
    while (!stop_) {
      std::vector<pollfd> fds;
      for (const Conn& c : conns) fds.push_back({c.fd.valid() ? c.fd.get() : -1, POLLIN, 0});
      poll(fds.data(), fds.size(), 50);
      const Clock::time_point now = Clock::now();
      for (size_t i = 0; i < conns.size(); ++i) {
        Conn& c = conns[i];
        if (!c.fd.valid()) {
          Open(c);
          continue;
        }
        if (fds[i].revents != 0) {
          char buf[4096];
          const ssize_t n = recv(c.fd.get(), buf, sizeof buf, MSG_DONTWAIT);
          if (n <= 0) {
            Closed(c, false);
          } else {
            // Bytes instead of a close: drain until the close so that it is still timed.
            ssize_t more = n;
            while (more > 0) more = recv(c.fd.get(), buf, sizeof buf, 0);
            Closed(c, true);
          }
          continue;
        }
        if (now >= c.next_line) {
          const std::string line = "X-Slow-" + std::to_string(c.lines++) + ": trickle\r\n";
          c.next_line += std::chrono::seconds(1);
          if (!SendAll(c.fd.get(), line)) Closed(c, false);
        }
      }
    }
  }

  const int port_;
  const int count_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  Stats stats_;
  std::thread thread_;
};

// One GET on a fresh connection, as a probe makes it: "" when 200 came within the probe
// timeout, else what went wrong. `took_s`, when given, receives how long it took.
std::string Probe(int port, const std::string& path, double* took_s = nullptr) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(kProbeTimeout);
  client.set_read_timeout(kProbeTimeout);
  client.set_write_timeout(kProbeTimeout);
  const Clock::time_point start = Clock::now();
  httplib::Result res = client.Get(path.c_str());
  const Clock::duration took = Clock::now() - start;
  if (took_s != nullptr) *took_s = Seconds(took);
  if (!res) return path + ": " + httplib::to_string(res.error()) + " after " + std::to_string(Seconds(took)) + " s";
  if (res->status != 200) return path + ": status " + std::to_string(res->status);
  if (took > kProbeTimeout) return path + ": took " + std::to_string(Seconds(took)) + " s";
  return "";
}

TEST(HttpEndpointSlowClients, ProbesAnswerWhileSixtyFourClientsTrickleHeaders) {
  Registry r;
  StatusOr<std::unique_ptr<HttpEndpoint>> e = HttpEndpoint::Start("127.0.0.1:0", {&r, {}, {}});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  const int port = (*e)->port();

  SlowClients slow(port, 64);
  // Every slow connection has been accepted and has sent a header line or two: with a
  // fixed pool they now hold every serving thread.
  std::this_thread::sleep_for(milliseconds(1500));
  ASSERT_GE(slow.stats().opened, 64);

  std::vector<std::string> failures;
  int probes = 0;
  double worst_s = 0;
  const Clock::time_point until = Clock::now() + std::chrono::seconds(6);
  while (Clock::now() < until) {
    for (const char* path : {"/healthz", "/readyz", "/metrics"}) {
      double took_s = 0;
      const std::string failure = Probe(port, path, &took_s);
      ++probes;
      worst_s = std::max(worst_s, took_s);
      if (!failure.empty()) failures.push_back(failure);
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  const SlowClients::Stats s = slow.stats();
  RecordProperty("probes", probes);
  RecordProperty("slowest_probe_ms", static_cast<int>(worst_s * 1000));
  RecordProperty("slow_connections_closed", s.closed_by_server);
  RecordProperty("longest_slow_connection_ms", static_cast<int>(s.longest_s * 1000));
  std::string first;
  for (size_t i = 0; i < failures.size() && i < 6; ++i) first += "\n  " + failures[i];
  EXPECT_TRUE(failures.empty()) << failures.size() << " of " << probes << " probes failed:" << first;

  // Each of the first 64 was cut by the server, and none lived past the deadline; the
  // server closes without an answer (the client never finished asking).
  const double limit_s = Seconds(kLimits.request_deadline + kSlack);
  EXPECT_GE(s.closed_by_server, 64) << "slow connections the server closed in 7.5 s";
  EXPECT_LE(s.longest_s, limit_s) << "a slow connection outlived the request deadline";
  EXPECT_EQ(s.answered, 0);
  EXPECT_EQ(s.connect_failures, 0) << "slow connections refused: the cap is meant to be above 64";

  httplib::Client client("127.0.0.1", port);
  httplib::Result m = client.Get("/metrics");
  ASSERT_TRUE(m) << httplib::to_string(m.error());
  EXPECT_GE(SampleValue(m->body, "conveyor_http_connections_timed_out_total{phase=\"request\"}"), 64) << m->body;
  EXPECT_EQ(SampleValue(m->body, "conveyor_http_connections_refused_total"), 0) << m->body;
}

TEST(HttpEndpointSlowClients, ConnectionsPastTheCapAreClosedAtOnce) {
  Registry r;
  StatusOr<std::unique_ptr<HttpEndpoint>> e = HttpEndpoint::Start("127.0.0.1:0", {&r, {}, {}});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  const int port = (*e)->port();

  // The cap's worth of connections, each with half a request head, held by the server
  // until their deadline.
  std::vector<UniqueFd> held;
  for (size_t i = 0; i < kLimits.max_connections; ++i) {
    UniqueFd fd = ConnectTo(port);
    ASSERT_TRUE(fd.valid()) << "connection " << i;
    ASSERT_TRUE(SendAll(fd.get(), "GET /healthz HTTP/1.1\r\n"));
    held.push_back(std::move(fd));
  }
  // One more: accepted by the kernel, then closed by the server without waiting.
  const Clock::time_point start = Clock::now();
  UniqueFd extra = ConnectTo(port);
  ASSERT_TRUE(extra.valid());
  pollfd p{extra.get(), POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 1000), 1) << "the connection past the cap is still open after 1 s";
  char byte;
  EXPECT_LE(recv(extra.get(), &byte, 1, 0), 0) << "closed, with nothing sent";
  EXPECT_LT(Clock::now() - start, kLimits.request_deadline / 2);

  // Once the held ones are cut, probes are served again and the refusal was counted.
  std::this_thread::sleep_for(kLimits.request_deadline + kSlack);
  EXPECT_EQ(Probe(port, "/healthz"), "");
  httplib::Client client("127.0.0.1", port);
  httplib::Result m = client.Get("/metrics");
  ASSERT_TRUE(m) << httplib::to_string(m.error());
  EXPECT_EQ(SampleValue(m->body, "conveyor_http_connections_refused_total"), 1) << m->body;
  EXPECT_GE(SampleValue(m->body, "conveyor_http_connections_timed_out_total{phase=\"request\"}"),
            static_cast<double>(kLimits.max_connections))
      << m->body;
}

}  // namespace
}  // namespace conveyor::metrics
