// Lane choice and timed runs for the GPU worker's issue thread.
#include "gpu_issue_policy.h"

#include <chrono>

namespace conveyor {

int64_t FramePixels(const FrameRequest& r) {
  int64_t pixels = 0;
  for (size_t i = 0; i < r.renditions.size(); ++i) {
    pixels += static_cast<int64_t>(RenditionWidth(r, i)) * RenditionHeight(r, i);
  }
  return pixels;
}

int LaneBalance::Take(int64_t pixels) {
  const int lane = Choose(pixels);
  next_ = (lane + 1) % lanes_;
  pixels_[lane] += pixels;
  return lane;
}

int LaneBalance::Choose(int64_t pixels) const {
  const int turn = next_;
  if (!balance_) return turn;
  int least = turn;
  for (int l = 0; l < lanes_; ++l) {
    if (pixels_[l].load() < pixels_[least].load()) least = l;
  }
  return pixels_[turn].load() > pixels_[least].load() + pixels ? least : turn;
}

uint64_t TimingRuns::RunFor(int frames) {
  if (!timing_.on()) return 0;
  if (timing_.every.count() == 0) return 1;
  if (frames_left_ <= 0) {
    const SteadyTime now = std::chrono::steady_clock::now();
    if (runs_ > 0 && now - started_ < timing_.every) return 0;
    ++runs_;
    started_ = now;
    frames_left_ = timing_.run_frames;
  }
  frames_left_ -= frames;
  return runs_;
}

}  // namespace conveyor
