// The text exposition: exact output for a small registry, ordering, escaping, and the
// spelling of special values.
#include "exposition.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace conveyor::metrics {
namespace {

MetricSpec Spec(std::string name, std::string help, std::vector<std::string> labels = {}) {
  MetricSpec s;
  s.name = std::move(name);
  s.help = std::move(help);
  s.label_names = std::move(labels);
  return s;
}

TEST(Exposition, SmallRegistryExactText) {
  Registry r;
  // Registered out of order: the output is ordered by name, children by label values.
  CounterFamily* frames = r.AddCounter(Spec("t_frames_total", "Frames.", {"device"})).value();
  HistogramFamily* lat =
      r.AddHistogram(Spec("t_latency_seconds", "Latency.", {"device"}), {0.001, 0.5}).value();
  Gauge* depth = r.AddGauge(Spec("t_depth", "Depth.")).value()->WithLabels({}).value();
  ASSERT_TRUE(r.AddGauge(Spec("t_unused", "Never given a child.", {"device"})).ok());

  frames->WithLabels({"gpu0"}).value()->Inc(7);
  frames->WithLabels({"cpu"}).value()->Inc(3);
  depth->Set(2.5);
  Histogram* h = lat->WithLabels({"cpu"}).value();
  h->Observe(0.0009765625);  // 2^-10: the sum below is exact
  h->Observe(0.25);
  h->Observe(2);

  EXPECT_EQ(RenderText(r),
            "# HELP t_depth Depth.\n"
            "# TYPE t_depth gauge\n"
            "t_depth 2.5\n"
            "# HELP t_frames_total Frames.\n"
            "# TYPE t_frames_total counter\n"
            "t_frames_total{device=\"cpu\"} 3\n"
            "t_frames_total{device=\"gpu0\"} 7\n"
            "# HELP t_latency_seconds Latency.\n"
            "# TYPE t_latency_seconds histogram\n"
            "t_latency_seconds_bucket{device=\"cpu\",le=\"0.001\"} 1\n"
            "t_latency_seconds_bucket{device=\"cpu\",le=\"0.5\"} 2\n"
            "t_latency_seconds_bucket{device=\"cpu\",le=\"+Inf\"} 3\n"
            "t_latency_seconds_sum{device=\"cpu\"} 2.2509765625\n"
            "t_latency_seconds_count{device=\"cpu\"} 3\n");
}

TEST(Exposition, UnlabelledHistogramHasOnlyLe) {
  Registry r;
  HistogramFamily* f = r.AddHistogram(Spec("h_seconds", "H."), {1e-05}).value();
  f->WithLabels({}).value()->Observe(1);
  EXPECT_EQ(RenderText(r),
            "# HELP h_seconds H.\n"
            "# TYPE h_seconds histogram\n"
            "h_seconds_bucket{le=\"1e-05\"} 0\n"
            "h_seconds_bucket{le=\"+Inf\"} 1\n"
            "h_seconds_sum 1\n"
            "h_seconds_count 1\n");
}

TEST(Exposition, EscapesHelpAndLabelValues) {
  Registry r;
  CounterFamily* f =
      r.AddCounter(Spec("e_total", "Back\\slash and\nnewline; \"quotes\" stay.", {"path"})).value();
  f->WithLabels({"a\"b\\c\nd"}).value()->Inc();
  EXPECT_EQ(RenderText(r),
            "# HELP e_total Back\\\\slash and\\nnewline; \"quotes\" stay.\n"
            "# TYPE e_total counter\n"
            "e_total{path=\"a\\\"b\\\\c\\nd\"} 1\n");
}

TEST(Exposition, SpecialValues) {
  EXPECT_EQ(FormatValue(std::nan("")), "NaN");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(1e6), "1000000");
  EXPECT_EQ(FormatValue(0.1), "0.1");
  EXPECT_EQ(FormatValue(18446744073709551615.0), "1.8446744073709552e+19");
  // Whatever the spelling, it reads back as the same double.
  for (double v : {0.1 + 0.2, 1.0 / 3, 123456789.123456789, 5e-324}) {
    EXPECT_EQ(std::strtod(FormatValue(v).c_str(), nullptr), v) << FormatValue(v);
  }
}

TEST(Exposition, EmptyRegistryRendersNothing) {
  Registry r;
  EXPECT_EQ(RenderText(r), "");
}

}  // namespace
}  // namespace conveyor::metrics
