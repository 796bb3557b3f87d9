// A small Prometheus client: a Registry of metric families (counters, gauges, histograms
// and gauges read from a callback at scrape time), each with fixed label names and one
// child per tuple of label values. Hot-path updates on a child are lock-free atomics.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "status.h"

namespace conveyor::metrics {

enum class MetricType { kCounter, kGauge, kHistogram };
const char* MetricTypeName(MetricType type);

// A monotonic count. Integer so that concurrent increments sum exactly.
class Counter {
 public:
  void Inc(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// A value that goes up and down.
class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double d);  // CAS loop: std::atomic<double>::fetch_add is C++20
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// Observations counted into buckets fixed by the family. Observe() neither locks nor
// allocates. A scrape racing an Observe() may see the bucket before the sum; each
// cumulative count it reports is still monotone, and _count is the +Inf bucket.
class Histogram {
 public:
  explicit Histogram(const std::vector<double>* bounds);
  void Observe(double v);
  // Per bucket (not cumulative), bounds().size() + 1 entries, the last one +Inf.
  std::vector<uint64_t> BucketCounts() const;
  double Sum() const { return sum_.load(std::memory_order_relaxed); }
  const std::vector<double>& bounds() const { return *bounds_; }

 private:
  const std::vector<double>* bounds_;  // owned by the family, which outlives its children
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::atomic<double> sum_{0.0};
};

// What a family looks like at one instant, for the exposition.
struct ChildSnapshot {
  std::vector<std::string> label_values;
  double value = 0;                     // counter, gauge
  std::vector<uint64_t> cumulative;     // histogram: one per bound, then +Inf
  double sum = 0;                       // histogram
};
struct FamilySnapshot {
  std::string name;
  std::string help;
  MetricType type = MetricType::kGauge;
  std::vector<std::string> label_names;
  std::vector<double> bounds;           // histogram
  std::vector<ChildSnapshot> children;  // ordered by label values
};

// What every family is registered with.
struct MetricSpec {
  std::string name;
  std::string help;
  std::vector<std::string> label_names;
  // A cap on label-value tuples, so that a label fed from client input (a rendition
  // size) cannot grow the scrape without bound. New children past it are refused.
  size_t max_children = 1000;
};

class FamilyBase {
 public:
  virtual ~FamilyBase() = default;
  const MetricSpec& spec() const { return spec_; }
  const std::string& name() const { return spec_.name; }
  virtual MetricType type() const = 0;
  virtual FamilySnapshot Snapshot() const = 0;

 protected:
  explicit FamilyBase(MetricSpec spec) : spec_(std::move(spec)) {}
  // INVALID_ARGUMENT on the wrong number of values, RESOURCE_EXHAUSTED past the cap
  // (only when `adding`).
  Status CheckLabels(const std::vector<std::string>& values, size_t children, bool adding) const;
  FamilySnapshot EmptySnapshot(MetricType type) const;

  MetricSpec spec_;
};

// Counters, gauges or histograms sharing a name. A lookup takes the family's mutex and
// may allocate: do it once (per device, per session) and keep the pointer, which stays
// valid as long as the registry.
template <typename T>
class Family final : public FamilyBase {
 public:
  Family(MetricSpec spec, std::vector<double> bounds)
      : FamilyBase(std::move(spec)), bounds_(std::move(bounds)) {}

  StatusOr<T*> WithLabels(const std::vector<std::string>& values);
  MetricType type() const override;
  FamilySnapshot Snapshot() const override;

 private:
  std::vector<double> bounds_;  // histograms only
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<T>> children_;
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

class CallbackGaugeFamily;

// Removes its callback from the family when it goes away, so a callback that captures
// a worker cannot outlive it. Move-only; the registry must outlive it.
class ScopedCallback {
 public:
  ScopedCallback() = default;
  ScopedCallback(CallbackGaugeFamily* family, std::vector<std::string> values)
      : family_(family), values_(std::move(values)) {}
  ScopedCallback(ScopedCallback&& o) noexcept;
  ScopedCallback& operator=(ScopedCallback&& o) noexcept;
  ScopedCallback(const ScopedCallback&) = delete;
  ScopedCallback& operator=(const ScopedCallback&) = delete;
  ~ScopedCallback() { Reset(); }
  void Reset();

 private:
  CallbackGaugeFamily* family_ = nullptr;
  std::vector<std::string> values_;
};

// Gauges whose value is read when scraped (pinned bytes, queue depth): nothing to keep
// in sync on the hot path. Callbacks run on the scraping thread, outside the family's
// lock, so they may take their own locks; they must be cheap and thread-safe. The same
// family typed kCounter exports a total something else keeps (the kernel's CPU seconds);
// its callback must never go down.
class CallbackGaugeFamily final : public FamilyBase {
 public:
  explicit CallbackGaugeFamily(MetricSpec spec, MetricType type = MetricType::kGauge)
      : FamilyBase(std::move(spec)), type_(type) {}

  // INVALID_ARGUMENT when these label values already have a callback.
  StatusOr<ScopedCallback> Bind(const std::vector<std::string>& values, std::function<double()> fn);
  MetricType type() const override { return type_; }
  FamilySnapshot Snapshot() const override;

 private:
  friend class ScopedCallback;
  void Remove(const std::vector<std::string>& values);

  const MetricType type_;

  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::shared_ptr<std::function<double()>>> callbacks_;
};

// Owns the families. Registration validates names (Prometheus syntax, `_total` on
// counters and only there, no clash with another family's series, label names valid
// and unique) and returns INVALID_ARGUMENT instead of aborting, so that conveyord can
// refuse to start with a clear message. A family without labels gets its one child now,
// so it is exported as 0 from the first scrape.
class Registry {
 public:
  StatusOr<CounterFamily*> AddCounter(MetricSpec spec);
  StatusOr<GaugeFamily*> AddGauge(MetricSpec spec);
  // `bounds`: the buckets' upper bounds, finite and strictly increasing; +Inf is implied.
  StatusOr<HistogramFamily*> AddHistogram(MetricSpec spec, std::vector<double> bounds);
  StatusOr<CallbackGaugeFamily*> AddCallbackGauge(MetricSpec spec);
  // A counter read from a callback at scrape time; its name ends in _total like any counter's.
  StatusOr<CallbackGaugeFamily*> AddCallbackCounter(MetricSpec spec);

  // Every family, ordered by name.
  std::vector<FamilySnapshot> Collect() const;

 private:
  Status Validate(const MetricSpec& spec, MetricType type) const;
  Status Insert(std::unique_ptr<FamilyBase> family);
  template <typename F>
  StatusOr<F*> AddFamily(std::unique_ptr<F> family);

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<FamilyBase>> families_;
};

bool IsValidMetricName(const std::string& name);
bool IsValidLabelName(const std::string& name);

}  // namespace conveyor::metrics
