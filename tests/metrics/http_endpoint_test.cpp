// The HTTP endpoint: /metrics, /healthz and /readyz over a real socket with httplib's
// client, readiness flipping when the hook says draining, and listen strings refused.
#include "http_endpoint.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <string>

#include "exposition.h"

namespace conveyor::metrics {
namespace {

MetricSpec Spec(std::string name) {
  MetricSpec s;
  s.name = std::move(name);
  s.help = "Test counter.";
  return s;
}

TEST(HttpEndpoint, ServesMetricsAndProbes) {
  Registry r;
  Counter* c = r.AddCounter(Spec("http_test_total")).value()->WithLabels({}).value();
  c->Inc(41);
  std::atomic<bool> draining{false};
  std::atomic<bool> wedged{false};
  HttpEndpoint::Hooks hooks;
  hooks.registry = &r;
  hooks.alive = [&] { return wedged ? Internal("worker gpu0 stuck for 30 s") : OkStatus(); };
  hooks.ready = [&] { return draining ? Unavailable("draining") : OkStatus(); };
  StatusOr<std::unique_ptr<HttpEndpoint>> e = HttpEndpoint::Start("127.0.0.1:0", hooks);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ASSERT_GT((*e)->port(), 0);
  EXPECT_EQ((*e)->address(), "127.0.0.1:" + std::to_string((*e)->port()));

  httplib::Client client("127.0.0.1", (*e)->port());
  c->Inc();
  httplib::Result m = client.Get("/metrics");
  ASSERT_TRUE(m) << httplib::to_string(m.error());
  EXPECT_EQ(m->status, 200);
  EXPECT_EQ(m->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  // The registry's families, and the endpoint's own about its connections.
  EXPECT_NE(m->body.find(RenderText(r)), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("\nconveyor_http_open_connections 1\n"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("http_test_total 42\n"), std::string::npos) << m->body;

  httplib::Result h = client.Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(h->body, "ok\n");
  httplib::Result ready = client.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);

  draining = true;
  ready = client.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 503);
  EXPECT_EQ(ready->body, "draining\n");
  h = client.Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200) << "draining is not dead";

  wedged = true;
  h = client.Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 503);
  EXPECT_EQ(h->body, "worker gpu0 stuck for 30 s\n");

  httplib::Result missing = client.Get("/nope");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);

  (*e)->Stop();
  (*e)->Stop();  // idempotent
  httplib::Client after("127.0.0.1", (*e)->port());
  after.set_connection_timeout(0, 200000);
  EXPECT_FALSE(after.Get("/healthz")) << "still serving after Stop()";
}

TEST(HttpEndpoint, AReadyNoteFollowsTheReadyAnswerOnly) {
  Registry r;
  std::atomic<bool> draining{false};
  HttpEndpoint::Hooks hooks;
  hooks.registry = &r;
  hooks.ready = [&] { return draining ? Unavailable("draining") : OkStatus(); };
  hooks.ready_note = "warning: workers = \"auto\" serves on the CPU: no GPU";
  StatusOr<std::unique_ptr<HttpEndpoint>> e = HttpEndpoint::Start("127.0.0.1:0", hooks);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  httplib::Client client("127.0.0.1", (*e)->port());
  httplib::Result ready = client.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  EXPECT_EQ(ready->body, "ok\nwarning: workers = \"auto\" serves on the CPU: no GPU\n");
  draining = true;
  ready = client.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 503);
  EXPECT_EQ(ready->body, "draining\n");
  httplib::Result h = client.Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->body, "ok\n") << "the note is readiness's";
}

TEST(HttpEndpoint, OtherMethodsThanGetAre405WithAllow) {
  Registry r;
  HttpEndpoint::Hooks hooks;
  hooks.registry = &r;
  StatusOr<std::unique_ptr<HttpEndpoint>> e = HttpEndpoint::Start("127.0.0.1:0", hooks);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  httplib::Client client("127.0.0.1", (*e)->port());
  for (const char* path : {"/metrics", "/healthz", "/readyz"}) {
    for (const char* method : {"POST", "PUT", "PATCH", "DELETE"}) {
      const std::string m = method;
      httplib::Result res = m == "POST"    ? client.Post(path, "x", "text/plain")
                            : m == "PUT"   ? client.Put(path, "x", "text/plain")
                            : m == "PATCH" ? client.Patch(path, "x", "text/plain")
                                           : client.Delete(path);
      ASSERT_TRUE(res) << method << " " << path << ": " << httplib::to_string(res.error());
      EXPECT_EQ(res->status, 405) << method << " " << path;
      EXPECT_EQ(res->get_header_value("Allow"), "GET, HEAD") << method << " " << path;
    }
    httplib::Result head = client.Head(path);
    ASSERT_TRUE(head) << path;
    EXPECT_EQ(head->status, 200) << path;
  }
  // A path that does not exist is still 404, whatever the method.
  httplib::Result missing = client.Post("/nothing", "x", "text/plain");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

TEST(HttpEndpoint, UnsetHooksMeanAliveAndReady) {
  Registry r;
  StatusOr<std::unique_ptr<HttpEndpoint>> e = HttpEndpoint::Start("127.0.0.1:0", {&r, {}, {}});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  httplib::Client client("127.0.0.1", (*e)->port());
  httplib::Result h = client.Get("/healthz");
  httplib::Result ready = client.Get("/readyz");
  ASSERT_TRUE(h && ready);
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(ready->status, 200);
}

TEST(HttpEndpoint, ServesOnIpv6Loopback) {
  Registry r;
  StatusOr<std::unique_ptr<HttpEndpoint>> e = HttpEndpoint::Start("[::1]:0", {&r, {}, {}});
  if (!e.ok()) GTEST_SKIP() << "no IPv6 loopback on this host: " << e.status().ToString();
  EXPECT_EQ((*e)->address(), "[::1]:" + std::to_string((*e)->port()));
  httplib::Client client("::1", (*e)->port());
  httplib::Result h = client.Get("/healthz");
  ASSERT_TRUE(h) << httplib::to_string(h.error());
  EXPECT_EQ(h->status, 200);
}

TEST(HttpEndpoint, StopRightAfterStartReturns) {
  Registry r;
  for (int i = 0; i < 20; ++i) {
    StatusOr<std::unique_ptr<HttpEndpoint>> e = HttpEndpoint::Start("127.0.0.1:0", {&r, {}, {}});
    ASSERT_TRUE(e.ok()) << e.status().ToString();
  }  // each destructor stops its server; a hang here fails by the test's timeout
}

TEST(HttpEndpoint, PortInUseIsUnavailable) {
  Registry r;
  std::unique_ptr<HttpEndpoint> first = HttpEndpoint::Start("127.0.0.1:0", {&r, {}, {}}).value();
  const StatusOr<std::unique_ptr<HttpEndpoint>> second =
      HttpEndpoint::Start("127.0.0.1:" + std::to_string(first->port()), {&r, {}, {}});
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable) << second.status().ToString();
}

TEST(HttpEndpoint, BadListenStringsAreRefused) {
  Registry r;
  for (const char* bad : {"", "9100", "localhost", "127.0.0.1:", "127.0.0.1:99999", "::1:9100",
                          "[::1]9100", "[]:9100", "unix:/tmp/metrics.sock", "/tmp/metrics.sock",
                          "host name:80", "127.0.0.1:-1"}) {
    const StatusOr<std::unique_ptr<HttpEndpoint>> e = HttpEndpoint::Start(bad, {&r, {}, {}});
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument) << "'" << bad << "'";
    EXPECT_FALSE(e.status().message().empty());
  }
  EXPECT_EQ(HttpEndpoint::Start("127.0.0.1:0", {nullptr, {}, {}}).status().code(),
            StatusCode::kInvalidArgument)
      << "a registry is required";
}

TEST(HttpEndpoint, RegistryWithTheEndpointsOwnFamilyIsRefused) {
  Registry r;
  MetricSpec taken;
  taken.name = "conveyor_http_open_connections";
  taken.help = "Already here.";
  ASSERT_TRUE(r.AddGauge(taken).ok());
  const StatusOr<std::unique_ptr<HttpEndpoint>> e = HttpEndpoint::Start("127.0.0.1:0", {&r, {}, {}});
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("conveyor_http_open_connections"), std::string::npos)
      << e.status().ToString();
}

TEST(HttpEndpoint, ParsesListenStrings) {
  StatusOr<HttpListen> v4 = ParseHttpListen("127.0.0.1:9100");
  ASSERT_TRUE(v4.ok()) << v4.status().ToString();
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, 9100);
  StatusOr<HttpListen> v6 = ParseHttpListen("[::1]:9100");
  ASSERT_TRUE(v6.ok()) << v6.status().ToString();
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 9100);
  StatusOr<HttpListen> name = ParseHttpListen("localhost:0");
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(name->port, 0);
}

}  // namespace
}  // namespace conveyor::metrics
