// The choices the GPU worker's issue thread makes for each group of frames: the encode
// lane it takes, and whether its frames are timed.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "worker.h"

namespace conveyor {

// Pixels a frame's renditions encode: the load it puts on its encode lane.
int64_t FramePixels(const FrameRequest& r);

// A group takes the next lane in turn, unless that lane holds more pixels not yet read
// back than the least loaded lane plus the group's (WorkerOptions::
// balance_encode_streams). Frames of one size still alternate; a light frame behind a
// heavy one takes the other lane instead of waiting for the heavy frame's whole encode.
class LaneBalance {
 public:
  LaneBalance(int lanes, bool balance)
      : lanes_(lanes), balance_(balance), pixels_(std::make_unique<std::atomic<int64_t>[]>(lanes)) {}

  // The lane for a group of `pixels`, which count on it until they are released. Issue
  // thread only.
  int Take(int64_t pixels);
  // A frame of `pixels` is read back from `lane`. Any thread.
  void Release(int lane, int64_t pixels) { pixels_[lane] -= pixels; }

 private:
  int Choose(int64_t pixels) const;

  const int lanes_;
  const bool balance_;
  int next_ = 0;  // the lane in turn
  std::unique_ptr<std::atomic<int64_t>[]> pixels_;  // per lane; value-initialised to zero
};

// Which groups get timing events (StageTiming): a run takes the next run_frames frames
// and starts at most every `every`.
class TimingRuns {
 public:
  explicit TimingRuns(const StageTiming& timing) : timing_(timing) {}

  // The run of timed frames a group of `frames` issued now belongs to, counting from 1,
  // or 0 when it is not timed. Issue thread only.
  uint64_t RunFor(int frames);

 private:
  const StageTiming timing_;
  uint64_t runs_ = 0;
  int frames_left_ = 0;
  SteadyTime started_;
};

}  // namespace conveyor
