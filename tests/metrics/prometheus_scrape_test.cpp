// A real Prometheus scrapes the endpoint: the counter value it stores is the one we set,
// so names, format and Content-Type are what Prometheus itself accepts.
#include <gtest/gtest.h>

#include <cmath>

#include "http_endpoint.h"
#include "prometheus_server.h"

namespace conveyor::metrics {
namespace {

using std::chrono::milliseconds;

TEST(PrometheusScrape, SeesTheIncrementedCounter) {
  Registry r;
  MetricSpec spec;
  spec.name = "conveyor_scrape_test_events_total";
  spec.help = "Events counted by the scrape test.";
  spec.label_names = {"device"};
  Counter* events = r.AddCounter(spec).value()->WithLabels({"gpu0"}).value();
  std::unique_ptr<HttpEndpoint> endpoint = HttpEndpoint::Start("127.0.0.1:0", {&r, {}, {}}).value();

  testing::PrometheusServer::Options options;
  options.targets = {endpoint->address()};
  StatusOr<std::unique_ptr<testing::PrometheusServer>> prom = testing::PrometheusServer::Start(options);
  ASSERT_TRUE(prom.ok()) << prom.status().ToString();

  // First the target is up (a scrape happened), then a new value reaches Prometheus.
  Status up = (*prom)->WaitForValue("up{job=\"conveyor\"}", 1, milliseconds(15000));
  ASSERT_TRUE(up.ok()) << up.ToString() << "\n" << (*prom)->LogTail();
  events->Inc(7);
  const Status seen = (*prom)->WaitForValue(
      "conveyor_scrape_test_events_total{device=\"gpu0\",job=\"conveyor\"}", 7, milliseconds(15000));
  EXPECT_TRUE(seen.ok()) << seen.ToString() << "\n" << (*prom)->LogTail();

  // Queries the server refuses, or that match nothing, come back as errors.
  EXPECT_EQ((*prom)->Query("rate(").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*prom)->Query("no_such_metric").status().code(), StatusCode::kNotFound);
  StatusOr<double> scalar = (*prom)->Query("scalar(vector(2.5))");
  ASSERT_TRUE(scalar.ok()) << scalar.status().ToString();
  EXPECT_EQ(*scalar, 2.5);
}

TEST(PrometheusQueryResult, ParsesAnswers) {
  using testing::ParseQueryResult;
  EXPECT_EQ(ParseQueryResult(R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"x","job":"value\":["},"value":[1700000000.5,"42"]}]}})")
                .value(),
            42);
  EXPECT_EQ(ParseQueryResult(R"({"status":"success","data":{"resultType":"scalar","result":[1700000000.5,"-1.5e3"]}})")
                .value(),
            -1500);
  EXPECT_TRUE(std::isnan(ParseQueryResult(R"({"status":"success","data":{"resultType":"scalar","result":[1,"NaN"]}})").value()));
  EXPECT_EQ(ParseQueryResult(R"({"status":"success","data":{"resultType":"vector","result":[]}})").status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(ParseQueryResult(R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]},{"metric":{},"value":[1,"2"]}]}})")
                .status()
                .code(),
            StatusCode::kFailedPrecondition);
  const StatusOr<double> err =
      ParseQueryResult(R"({"status":"error","errorType":"bad_data","error":"parse error at char 6"})");
  EXPECT_EQ(err.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(err.status().message().find("parse error at char 6"), std::string::npos);
  EXPECT_EQ(ParseQueryResult(R"({"status":"success","data":{"resultType":"scalar","result":[1,"abc"]}})").status().code(),
            StatusCode::kInternal);
}

}  // namespace
}  // namespace conveyor::metrics
