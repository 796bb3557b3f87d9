// The registry's semantics: counters, gauges, histograms and callback gauges, name and
// label validation, callback counters, the label-set cap, and exact totals under concurrent updates.
#include "metrics_registry.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace conveyor::metrics {
namespace {

MetricSpec Spec(std::string name, std::vector<std::string> labels = {}, size_t max_children = 1000) {
  MetricSpec s;
  s.name = std::move(name);
  s.help = "help";
  s.label_names = std::move(labels);
  s.max_children = max_children;
  return s;
}

// By value: callers pass a fresh Collect().
FamilySnapshot Find(const std::vector<FamilySnapshot>& all, const std::string& name) {
  for (const FamilySnapshot& f : all) {
    if (f.name == name) return f;
  }
  ADD_FAILURE() << "no family " << name;
  return FamilySnapshot();
}

TEST(MetricsRegistry, CounterCountsPerLabelSet) {
  Registry r;
  StatusOr<CounterFamily*> f = r.AddCounter(Spec("frames_total", {"device"}));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  Counter* cpu = (*f)->WithLabels({"cpu"}).value();
  Counter* gpu = (*f)->WithLabels({"gpu0"}).value();
  cpu->Inc();
  cpu->Inc(4);
  gpu->Inc(2);
  EXPECT_EQ(cpu->Value(), 5u);
  EXPECT_EQ(gpu->Value(), 2u);
  // The same label values give the same child back.
  EXPECT_EQ((*f)->WithLabels({"cpu"}).value(), cpu);
  const FamilySnapshot s = Find(r.Collect(), "frames_total");
  EXPECT_EQ(s.type, MetricType::kCounter);
  ASSERT_EQ(s.children.size(), 2u);
  EXPECT_EQ(s.children[0].label_values, std::vector<std::string>{"cpu"});
  EXPECT_EQ(s.children[0].value, 5);
  EXPECT_EQ(s.children[1].value, 2);
}

TEST(MetricsRegistry, WrongNumberOfLabelValuesIsRefused) {
  Registry r;
  CounterFamily* f = r.AddCounter(Spec("a_total", {"device", "rendition"})).value();
  EXPECT_EQ(f->WithLabels({"cpu"}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f->WithLabels({"cpu", "1x1", "x"}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(f->WithLabels({"cpu", "1x1"}).ok());
}

TEST(MetricsRegistry, LabelSetsAreCapped) {
  Registry r;
  CounterFamily* f = r.AddCounter(Spec("capped_total", {"rendition"}, 2)).value();
  ASSERT_TRUE(f->WithLabels({"a"}).ok());
  ASSERT_TRUE(f->WithLabels({"b"}).ok());
  EXPECT_EQ(f->WithLabels({"c"}).status().code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(f->WithLabels({"a"}).ok()) << "existing children stay reachable at the cap";
  EXPECT_EQ(Find(r.Collect(), "capped_total").children.size(), 2u);
}

TEST(MetricsRegistry, UnlabelledFamiliesExistFromTheStart) {
  Registry r;
  ASSERT_TRUE(r.AddCounter(Spec("started_total")).ok());
  ASSERT_TRUE(r.AddGauge(Spec("temperature")).ok());
  const std::vector<FamilySnapshot> all = r.Collect();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].name, "started_total");  // ordered by name
  ASSERT_EQ(all[0].children.size(), 1u);
  EXPECT_EQ(all[0].children[0].value, 0);
  EXPECT_EQ(all[1].children.size(), 1u);
}

TEST(MetricsRegistry, GaugeSetsAndAdds) {
  Registry r;
  Gauge* g = r.AddGauge(Spec("ratio")).value()->WithLabels({}).value();
  g->Set(0.5);
  g->Add(0.25);
  g->Add(-1);
  EXPECT_DOUBLE_EQ(g->Value(), -0.25);
}

TEST(MetricsRegistry, HistogramBucketsAreLessOrEqual) {
  Registry r;
  HistogramFamily* f = r.AddHistogram(Spec("d_seconds"), {0.1, 1}).value();
  Histogram* h = f->WithLabels({}).value();
  for (double v : {0.05, 0.1, 0.5, 1.0, 3.0}) h->Observe(v);
  EXPECT_EQ(h->BucketCounts(), (std::vector<uint64_t>{2, 2, 1}));
  EXPECT_DOUBLE_EQ(h->Sum(), 4.65);
  const FamilySnapshot s = Find(r.Collect(), "d_seconds");
  ASSERT_EQ(s.children.size(), 1u);
  EXPECT_EQ(s.children[0].cumulative, (std::vector<uint64_t>{2, 4, 5}));
  EXPECT_EQ(s.bounds, (std::vector<double>{0.1, 1}));
}

TEST(MetricsRegistry, BadHistogramBoundsAreRefused) {
  Registry r;
  EXPECT_FALSE(r.AddHistogram(Spec("a_seconds"), {}).ok());
  EXPECT_FALSE(r.AddHistogram(Spec("b_seconds"), {1, 1}).ok());
  EXPECT_FALSE(r.AddHistogram(Spec("c_seconds"), {2, 1}).ok());
  EXPECT_FALSE(r.AddHistogram(Spec("d_seconds"), {1, std::numeric_limits<double>::infinity()}).ok());
  EXPECT_FALSE(r.AddHistogram(Spec("e_seconds", {"le"}), {1}).ok());
}

TEST(MetricsRegistry, InvalidNamesAreRefused) {
  Registry r;
  for (const char* bad : {"", "9lives_total", "has-dash_total", "has space_total", "é_total"}) {
    const StatusOr<CounterFamily*> f = r.AddCounter(Spec(bad));
    EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument) << "'" << bad << "'";
  }
  EXPECT_TRUE(r.AddCounter(Spec("ns:sub_total")).ok()) << "colons are legal in metric names";
  EXPECT_TRUE(r.AddCounter(Spec("_private_total")).ok());
}

TEST(MetricsRegistry, TotalSuffixOnlyOnCounters) {
  Registry r;
  const StatusOr<CounterFamily*> c = r.AddCounter(Spec("frames"));
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("_total"), std::string::npos) << c.status().message();
  EXPECT_FALSE(r.AddGauge(Spec("depth_total")).ok());
  EXPECT_FALSE(r.AddHistogram(Spec("t_total"), {1}).ok());
  EXPECT_FALSE(r.AddCallbackGauge(Spec("cb_total")).ok());
}

TEST(MetricsRegistry, InvalidLabelNamesAreRefused) {
  Registry r;
  EXPECT_FALSE(r.AddCounter(Spec("a_total", {"1device"})).ok());
  EXPECT_FALSE(r.AddCounter(Spec("b_total", {"dev:ice"})).ok()) << "no colons in label names";
  EXPECT_FALSE(r.AddCounter(Spec("c_total", {"__reserved"})).ok());
  EXPECT_FALSE(r.AddCounter(Spec("d_total", {"device", "device"})).ok());
  EXPECT_FALSE(r.AddCounter(Spec("e_total", {""})).ok());
  EXPECT_TRUE(r.AddCounter(Spec("f_total", {"_device2"})).ok());
}

TEST(MetricsRegistry, MissingHelpIsRefused) {
  Registry r;
  MetricSpec s = Spec("quiet_total");
  s.help.clear();
  EXPECT_FALSE(r.AddCounter(s).ok());
}

TEST(MetricsRegistry, ClashingSeriesNamesAreRefused) {
  Registry r;
  ASSERT_TRUE(r.AddHistogram(Spec("lat_seconds"), {1}).ok());
  EXPECT_FALSE(r.AddGauge(Spec("lat_seconds")).ok());
  EXPECT_FALSE(r.AddGauge(Spec("lat_seconds_count")).ok());
  EXPECT_FALSE(r.AddGauge(Spec("lat_seconds_bucket")).ok());
  ASSERT_TRUE(r.AddGauge(Spec("x_sum")).ok());
  EXPECT_FALSE(r.AddHistogram(Spec("x"), {1}).ok()) << "x_sum is already a gauge";
  EXPECT_EQ(r.Collect().size(), 2u);
}

TEST(MetricsRegistry, ConcurrentUpdatesSumExactly) {
  Registry r;
  Counter* c = r.AddCounter(Spec("n_total")).value()->WithLabels({}).value();
  Gauge* g = r.AddGauge(Spec("g")).value()->WithLabels({}).value();
  Histogram* h = r.AddHistogram(Spec("h_seconds"), {0.5}).value()->WithLabels({}).value();
  constexpr int kThreads = 8;
  constexpr int kPerThread = 100000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        c->Inc();
        g->Add(1);  // whole numbers: exact in a double far past this total
        h->Observe(i % 2 == 0 ? 0.25 : 1.0);
      }
    });
  }
  // Scrapes racing the updates must not disturb them.
  for (int i = 0; i < 50; ++i) (void)r.Collect();
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(c->Value(), uint64_t{kThreads} * kPerThread);
  EXPECT_EQ(g->Value(), double{kThreads} * kPerThread);
  EXPECT_EQ(h->BucketCounts(), (std::vector<uint64_t>{kThreads * kPerThread / 2, kThreads * kPerThread / 2}));
  EXPECT_EQ(h->Sum(), kThreads * (kPerThread / 2) * 1.25);
}

TEST(MetricsRegistry, ConcurrentLookupsShareOneChild) {
  Registry r;
  CounterFamily* f = r.AddCounter(Spec("l_total", {"device"})).value();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([f] {
      for (int i = 0; i < 1000; ++i) f->WithLabels({"gpu" + std::to_string(i % 10)}).value()->Inc();
    });
  }
  for (std::thread& t : threads) t.join();
  const std::vector<FamilySnapshot> all = r.Collect();
  ASSERT_EQ(all[0].children.size(), 10u);
  for (const ChildSnapshot& c : all[0].children) EXPECT_EQ(c.value, 400);
}

TEST(MetricsRegistry, CallbackGaugesAreReadAtScrapeTime) {
  Registry r;
  CallbackGaugeFamily* f = r.AddCallbackGauge(Spec("pinned_bytes", {"device"})).value();
  double pinned = 10;
  {
    StatusOr<ScopedCallback> b = f->Bind({"gpu0"}, [&pinned] { return pinned; });
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_EQ(f->Bind({"gpu0"}, [] { return 0.0; }).status().code(), StatusCode::kInvalidArgument)
        << "one callback per label set";
    EXPECT_FALSE(f->Bind({"gpu0", "x"}, [] { return 0.0; }).ok());
    EXPECT_FALSE(f->Bind({"gpu1"}, nullptr).ok());
    EXPECT_EQ(Find(r.Collect(), "pinned_bytes").children.at(0).value, 10);
    pinned = 4096;
    EXPECT_EQ(Find(r.Collect(), "pinned_bytes").children.at(0).value, 4096);

    ScopedCallback moved = std::move(b.value());  // the binding travels with its owner
    EXPECT_EQ(Find(r.Collect(), "pinned_bytes").children.size(), 1u);
  }
  EXPECT_TRUE(Find(r.Collect(), "pinned_bytes").children.empty()) << "unbound when dropped";
  EXPECT_TRUE(f->Bind({"gpu0"}, [] { return 1.0; }).ok()) << "and the label set is free again";
}

TEST(MetricsRegistry, CallbackCountersAreCountersWithTotal) {
  Registry r;
  EXPECT_EQ(r.AddCallbackCounter(Spec("cpu_seconds")).status().code(), StatusCode::kInvalidArgument)
      << "a counter's name ends in _total";
  CallbackGaugeFamily* f = r.AddCallbackCounter(Spec("cpu_seconds_total")).value();
  EXPECT_EQ(f->type(), MetricType::kCounter);
  StatusOr<ScopedCallback> b = f->Bind({}, [] { return 2.5; });
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  const FamilySnapshot s = Find(r.Collect(), "cpu_seconds_total");
  EXPECT_EQ(s.type, MetricType::kCounter);
  EXPECT_EQ(s.children.at(0).value, 2.5) << "not rounded to an integer count";
}

}  // namespace
}  // namespace conveyor::metrics
