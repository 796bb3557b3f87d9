// How much the GPU's engines (upload, encode, readback) overlap, from the event times a
// worker records with stage timing on: the benchmark's overlap column and the daemon's
// conveyor_stream_overlap_ratio gauge use the same arithmetic.
#pragma once

#include <deque>
#include <mutex>
#include <vector>

#include "worker.h"

namespace conveyor {

// Total length covered by the intervals (overlaps counted once).
double UnionLength(std::vector<GpuInterval> v);

// Time during which at least two of the three engines were busy.
double OverlapLength(const std::vector<GpuInterval> engines[3]);

// The engines' overlap in the latest run of timed frames (StageTiming), over at most its
// last `frames` frames; thread-safe. Runs are apart in time, so one window never spans
// two: the time between them, untimed, would count as idle.
class OverlapWindow {
 public:
  explicit OverlapWindow(size_t frames = 256) : capacity_(frames) {}

  // Keeps the frame's upload, encode and band readback intervals. Frames without stage
  // timing are ignored, and so are stragglers of a run older than the current one.
  void Add(const FrameTimes& t);

  // Share of the window's span (first upload to last readback) in which two or more
  // engines were busy: the current run's once it has filled the window, else the last
  // finished run's (a run in progress has too few frames to say), else the current
  // run's; 0 for an empty window.
  double Ratio() const;

 private:
  struct Frame {
    GpuInterval upload, encode;
    std::vector<GpuInterval> readback;
  };
  static double RatioOf(const std::deque<Frame>& frames);

  const size_t capacity_;
  mutable std::mutex mu_;
  uint64_t run_ = 0;            // the run frames_ holds
  std::deque<Frame> frames_;
  double finished_ratio_ = -1;  // the previous run's; -1 before any run finished
};

}  // namespace conveyor
