// The registry, its families and their children (see metrics_registry.h).
#include "metrics_registry.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace conveyor::metrics {
namespace {

bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Every series name a family writes, so that two families cannot write the same one
// (a gauge "x_count" next to a histogram "x").
std::set<std::string> SeriesNames(const std::string& name, MetricType type) {
  if (type != MetricType::kHistogram) return {name};
  return {name, name + "_bucket", name + "_sum", name + "_count"};
}

void AtomicAdd(std::atomic<double>& a, double d) {
  double cur = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(cur, cur + d, std::memory_order_relaxed)) {
  }
}

}  // namespace

const char* MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
  }
  return "untyped";
}

bool IsValidMetricName(const std::string& name) {
  if (name.empty() || !(IsNameStart(name[0]) || name[0] == ':')) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return IsNameStart(c) || IsDigit(c) || c == ':'; });
}

bool IsValidLabelName(const std::string& name) {
  if (name.empty() || !IsNameStart(name[0])) return false;
  if (name.rfind("__", 0) == 0) return false;  // reserved for Prometheus' own labels
  return std::all_of(name.begin(), name.end(), [](char c) { return IsNameStart(c) || IsDigit(c); });
}

void Gauge::Add(double d) { AtomicAdd(value_, d); }

Histogram::Histogram(const std::vector<double>* bounds)
    : bounds_(bounds), counts_(new std::atomic<uint64_t>[bounds->size() + 1]) {
  for (size_t i = 0; i <= bounds_->size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double v) {
  // Bucket i counts v <= bounds[i] (Prometheus' "le"); past the last bound is +Inf.
  const size_t i = std::lower_bound(bounds_->begin(), bounds_->end(), v) - bounds_->begin();
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  AtomicAdd(sum_, v);
}

std::vector<uint64_t> Histogram::BucketCounts() const {
  std::vector<uint64_t> out(bounds_->size() + 1);
  for (size_t i = 0; i < out.size(); ++i) out[i] = counts_[i].load(std::memory_order_relaxed);
  return out;
}

Status FamilyBase::CheckLabels(const std::vector<std::string>& values, size_t children,
                               bool adding) const {
  if (values.size() != spec_.label_names.size()) {
    return InvalidArgument("metric " + spec_.name + " has " +
                           std::to_string(spec_.label_names.size()) + " labels, got " +
                           std::to_string(values.size()) + " values");
  }
  if (adding && children >= spec_.max_children) {
    return ResourceExhausted("metric " + spec_.name + " already has " + std::to_string(children) +
                             " label sets, its limit");
  }
  return OkStatus();
}

FamilySnapshot FamilyBase::EmptySnapshot(MetricType type) const {
  FamilySnapshot s;
  s.name = spec_.name;
  s.help = spec_.help;
  s.type = type;
  s.label_names = spec_.label_names;
  return s;
}

template <typename T>
StatusOr<T*> Family<T>::WithLabels(const std::vector<std::string>& values) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = children_.find(values);
  if (it != children_.end()) return it->second.get();
  RETURN_IF_ERROR(CheckLabels(values, children_.size(), /*adding=*/true));
  std::unique_ptr<T> child;
  if constexpr (std::is_same_v<T, Histogram>) {
    child = std::make_unique<Histogram>(&bounds_);
  } else {
    child = std::make_unique<T>();
  }
  T* raw = child.get();
  children_.emplace(values, std::move(child));
  return raw;
}

template <typename T>
MetricType Family<T>::type() const {
  if constexpr (std::is_same_v<T, Counter>) return MetricType::kCounter;
  if constexpr (std::is_same_v<T, Gauge>) return MetricType::kGauge;
  return MetricType::kHistogram;
}

template <typename T>
FamilySnapshot Family<T>::Snapshot() const {
  FamilySnapshot s = EmptySnapshot(type());
  s.bounds = bounds_;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [values, child] : children_) {
    ChildSnapshot c;
    c.label_values = values;
    if constexpr (std::is_same_v<T, Histogram>) {
      // One read per bucket, summed in order, keeps the cumulative counts monotone.
      uint64_t running = 0;
      for (uint64_t n : child->BucketCounts()) c.cumulative.push_back(running += n);
      c.sum = child->Sum();
    } else {
      c.value = static_cast<double>(child->Value());
    }
    s.children.push_back(std::move(c));
  }
  return s;
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

ScopedCallback::ScopedCallback(ScopedCallback&& o) noexcept
    : family_(o.family_), values_(std::move(o.values_)) {
  o.family_ = nullptr;
}

ScopedCallback& ScopedCallback::operator=(ScopedCallback&& o) noexcept {
  if (this != &o) {
    Reset();
    family_ = o.family_;
    values_ = std::move(o.values_);
    o.family_ = nullptr;
  }
  return *this;
}

void ScopedCallback::Reset() {
  if (family_ != nullptr) family_->Remove(values_);
  family_ = nullptr;
}

StatusOr<ScopedCallback> CallbackGaugeFamily::Bind(const std::vector<std::string>& values,
                                                   std::function<double()> fn) {
  if (!fn) return InvalidArgument("metric " + spec_.name + ": empty callback");
  std::lock_guard<std::mutex> lock(mu_);
  RETURN_IF_ERROR(CheckLabels(values, callbacks_.size(), /*adding=*/true));
  if (callbacks_.count(values) != 0) {
    return InvalidArgument("metric " + spec_.name + ": these label values already have a callback");
  }
  callbacks_.emplace(values, std::make_shared<std::function<double()>>(std::move(fn)));
  return ScopedCallback(this, values);
}

void CallbackGaugeFamily::Remove(const std::vector<std::string>& values) {
  std::lock_guard<std::mutex> lock(mu_);
  callbacks_.erase(values);
}

FamilySnapshot CallbackGaugeFamily::Snapshot() const {
  FamilySnapshot s = EmptySnapshot(type_);
  std::vector<std::pair<std::vector<std::string>, std::shared_ptr<std::function<double()>>>> copy;
  {
    std::lock_guard<std::mutex> lock(mu_);
    copy.assign(callbacks_.begin(), callbacks_.end());
  }
  // Outside the lock: a callback may block on its owner's mutex, and its owner may be
  // unbinding right now. The shared_ptr keeps the function itself alive meanwhile; what
  // it captures must stay valid until the ScopedCallback is gone.
  for (auto& [values, fn] : copy) {
    ChildSnapshot c;
    c.label_values = values;
    c.value = (*fn)();
    s.children.push_back(std::move(c));
  }
  return s;
}

Status Registry::Validate(const MetricSpec& spec, MetricType type) const {
  const std::string& n = spec.name;
  if (!IsValidMetricName(n)) {
    return InvalidArgument("metric name '" + n + "' is not [a-zA-Z_:][a-zA-Z0-9_:]*");
  }
  if (type == MetricType::kCounter && !EndsWith(n, "_total")) {
    return InvalidArgument("counter '" + n + "' must end in _total");
  }
  if (type != MetricType::kCounter && EndsWith(n, "_total")) {
    return InvalidArgument(std::string(MetricTypeName(type)) + " '" + n +
                           "' must not end in _total, which is for counters");
  }
  if (spec.help.empty()) return InvalidArgument("metric '" + n + "' has no help text");
  if (spec.max_children == 0) return InvalidArgument("metric '" + n + "': max_children is 0");
  std::set<std::string> seen;
  for (const std::string& l : spec.label_names) {
    if (!IsValidLabelName(l)) {
      return InvalidArgument("metric '" + n + "': label name '" + l +
                             "' is not [a-zA-Z_][a-zA-Z0-9_]* or starts with __");
    }
    if (type == MetricType::kHistogram && l == "le") {
      return InvalidArgument("histogram '" + n + "' may not have a label 'le'");
    }
    if (!seen.insert(l).second) {
      return InvalidArgument("metric '" + n + "': label '" + l + "' appears twice");
    }
  }
  const std::set<std::string> mine = SeriesNames(n, type);
  for (const auto& [other_name, other] : families_) {
    for (const std::string& s : SeriesNames(other_name, other->type())) {
      if (mine.count(s) != 0) {
        return InvalidArgument("metric '" + n + "' clashes with the registered metric '" +
                               other_name + "' on the series name '" + s + "'");
      }
    }
  }
  return OkStatus();
}

Status Registry::Insert(std::unique_ptr<FamilyBase> family) {
  // Validation and insertion under one lock, so two threads cannot both take a name.
  std::lock_guard<std::mutex> lock(mu_);
  RETURN_IF_ERROR(Validate(family->spec(), family->type()));
  const std::string name = family->name();
  families_.emplace(name, std::move(family));
  return OkStatus();
}

template <typename F>
StatusOr<F*> Registry::AddFamily(std::unique_ptr<F> family) {
  F* raw = family.get();
  const bool unlabelled = raw->spec().label_names.empty();
  RETURN_IF_ERROR(Insert(std::move(family)));
  if constexpr (!std::is_same_v<F, CallbackGaugeFamily>) {
    if (unlabelled) RETURN_IF_ERROR(raw->WithLabels({}).status());
  }
  return raw;
}

StatusOr<CounterFamily*> Registry::AddCounter(MetricSpec spec) {
  return AddFamily(std::make_unique<CounterFamily>(std::move(spec), std::vector<double>{}));
}

StatusOr<GaugeFamily*> Registry::AddGauge(MetricSpec spec) {
  return AddFamily(std::make_unique<GaugeFamily>(std::move(spec), std::vector<double>{}));
}

StatusOr<HistogramFamily*> Registry::AddHistogram(MetricSpec spec, std::vector<double> bounds) {
  if (bounds.empty()) return InvalidArgument("histogram '" + spec.name + "' has no buckets");
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i]) || (i > 0 && !(bounds[i] > bounds[i - 1]))) {
      return InvalidArgument("histogram '" + spec.name +
                             "': bucket bounds must be finite and strictly increasing");
    }
  }
  return AddFamily(std::make_unique<HistogramFamily>(std::move(spec), std::move(bounds)));
}

StatusOr<CallbackGaugeFamily*> Registry::AddCallbackGauge(MetricSpec spec) {
  return AddFamily(std::make_unique<CallbackGaugeFamily>(std::move(spec)));
}

StatusOr<CallbackGaugeFamily*> Registry::AddCallbackCounter(MetricSpec spec) {
  return AddFamily(std::make_unique<CallbackGaugeFamily>(std::move(spec), MetricType::kCounter));
}

std::vector<FamilySnapshot> Registry::Collect() const {
  std::vector<const FamilyBase*> families;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, f] : families_) families.push_back(f.get());
  }
  // Families are never removed, so the pointers stay valid without the lock, and a
  // callback gauge may look at the registry without deadlocking.
  std::vector<FamilySnapshot> out;
  out.reserve(families.size());
  for (const FamilyBase* f : families) out.push_back(f->Snapshot());
  return out;
}

}  // namespace conveyor::metrics
