// Interval arithmetic over GPU event times: union length and two-or-more-engines overlap.
#include "stream_overlap.h"

#include <algorithm>
#include <utility>

namespace conveyor {
namespace {

std::vector<GpuInterval> Merged(std::vector<GpuInterval> v) {
  std::sort(v.begin(), v.end(), [](const GpuInterval& a, const GpuInterval& b) { return a.start < b.start; });
  std::vector<GpuInterval> merged;
  for (const GpuInterval& i : v) {
    if (!merged.empty() && i.start <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, i.end);
    } else {
      merged.push_back(i);
    }
  }
  return merged;
}

}  // namespace

double UnionLength(std::vector<GpuInterval> v) {
  double total = 0;
  for (const GpuInterval& i : Merged(std::move(v))) total += i.end - i.start;
  return total;
}

double OverlapLength(const std::vector<GpuInterval> engines[3]) {
  std::vector<std::pair<double, int>> edges;
  for (int e = 0; e < 3; ++e) {
    // Each engine merged first, so that one engine never counts as two.
    for (const GpuInterval& i : Merged(engines[e])) {
      edges.push_back({i.start, +1});
      edges.push_back({i.end, -1});
    }
  }
  std::sort(edges.begin(), edges.end());
  double total = 0, last = 0;
  int busy = 0;
  for (const auto& [t, d] : edges) {
    if (busy >= 2) total += t - last;
    busy += d;
    last = t;
  }
  return total;
}

void OverlapWindow::Add(const FrameTimes& t) {
  if (t.timing_run == 0 || t.upload.end <= 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (t.timing_run < run_) return;
  if (t.timing_run > run_) {
    if (!frames_.empty()) finished_ratio_ = RatioOf(frames_);
    frames_.clear();
    run_ = t.timing_run;
  }
  frames_.push_back({t.upload, t.encode, t.band_readback});
  if (frames_.size() > capacity_) frames_.pop_front();
}

double OverlapWindow::Ratio() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (frames_.size() >= capacity_ || finished_ratio_ < 0) return RatioOf(frames_);
  return finished_ratio_;
}

double OverlapWindow::RatioOf(const std::deque<Frame>& frames) {
  if (frames.empty()) return 0;
  std::vector<GpuInterval> engines[3];
  double lo = frames.front().upload.start, hi = lo;
  for (const Frame& f : frames) {
    engines[0].push_back(f.upload);
    engines[1].push_back(f.encode);
    engines[2].insert(engines[2].end(), f.readback.begin(), f.readback.end());
    lo = std::min(lo, f.upload.start);
    for (const GpuInterval& b : f.readback) hi = std::max(hi, b.end);
    hi = std::max(hi, f.encode.end);
  }
  return hi > lo ? OverlapLength(engines) / (hi - lo) : 0;
}

}  // namespace conveyor
